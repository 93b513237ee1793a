/* cuda_nvml.h: the device's clocks, power, temperature and clocks event
 * (throttle) reasons through NVML (module prefix gt_cuda_nvml_), read next
 * to the final phase's timings (gt_backend.state). NVML is opened at run
 * time with dlopen("libnvidia-ml.so.1"), never linked: a worker or a
 * `gemmtune verify` without it (a container without the driver's
 * management library, the GPU-less CI) runs and records nothing. */
#ifndef CUDA_NVML_H
#define CUDA_NVML_H

#include <stddef.h>

#include "gt_gpu_state.h"

typedef struct gt_cuda_nvml gt_cuda_nvml;

/* Opens NVML for the device whose PCI bus id is pci_bus_id (what
 * cudaDeviceGetPCIBusId says: CUDA's device numbering differs from NVML's
 * under CUDA_VISIBLE_DEVICES, the bus id does not). NULL with the reason
 * when the library is absent or refuses. */
gt_cuda_nvml *gt_cuda_nvml_open(const char *pci_bus_id, char *why, size_t whylen);
/* One reading: SM clock, power, temperature, clocks event reasons. 0, or
 * -1 with the reason. */
int gt_cuda_nvml_sample(gt_cuda_nvml *n, gt_gpu_sample *s, char *err, size_t errlen);
void gt_cuda_nvml_close(gt_cuda_nvml *n);

#endif
