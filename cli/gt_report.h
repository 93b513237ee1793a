/* gt_report.h: the CLI's `report` command and `export --tunableop` (module
 * prefix gt_report_).
 *
 *   gemmtune report RUN | --db FILE.db [--device-model M]
 *       per GEMM: calls, FLOP share, default and tuned time, uplift, share
 *       of the workload's time saved; then the FLOP-weighted uplift, the
 *       workload speed-up, the geomean and the GEMM time of all calls
 *       before/after. RUN reads GET /v1/runs/{id}; --db an export file.
 *
 *   gemmtune export RUN --tunableop -o FILE.csv | --db FILE.db --tunableop -o FILE.csv
 *       [--validators FILE] [--pt-version V] [--cublaslt-version N]
 *       [--cuda-device "9.0:NVIDIA H100 80GB HBM3"] [--device-model M]
 *       [--default-only]
 *       a PyTorch TunableOp results file of the run's cuda results (see
 *       docs/interop.md for what PyTorch accepts and the limits). */
#ifndef GT_REPORT_H
#define GT_REPORT_H

#include <stddef.h>
#include <stdio.h>

/* Command entry points: argv holds the words after the command name;
 * --server/--token may appear among them. Exit codes like the CLI: 0, 1
 * error, 2 usage. */
int gt_report_main(const char *server, const char *token, int argc, char **argv);
/* 1 when the words after `export` contain --tunableop. */
int gt_report_wants_tunableop(int argc, char **argv);
int gt_report_export_tunableop(const char *server, const char *token, int argc, char **argv);

/* ---- the parts, for tests ---- */

typedef struct gt_tunableop_opts {
    const char *device_model;     /* NULL: the export's only cuda device model */
    const char *validators;       /* "Validator,KEY,VALUE" lines to write verbatim; NULL:
                                     built from the three values below */
    const char *pt_version;       /* PT_VERSION: torch.__version__ of the reader, exactly */
    const char *cublaslt_version; /* CUBLASLT_VERSION, e.g. "130100" */
    const char *cuda_device;      /* CUDA_DEVICE, e.g. "9.0:NVIDIA H100 80GB HBM3" */
    int default_only;             /* every solution "Default" (PyTorch without cuBLASLt
                                     TunableOp candidates) */
} gt_tunableop_opts;

typedef struct gt_tunableop_stats {
    size_t rows;                  /* result rows written */
    size_t tuned;                 /* ... naming a cuBLASLt config (the rest: Default) */
    size_t skipped;               /* GEMMs TunableOp has no operator for (reasons on warn) */
    size_t merged;                /* GEMMs sharing a TunableOp signature with a heavier one */
} gt_tunableop_stats;

/* Writes the TunableOp results file of an export's cuda best rows to out.
 * Skipped GEMMs are named on warn (may be NULL). 0, or -1 with err. */
int gt_report_tunableop(const char *export_db, const gt_tunableop_opts *o, FILE *out,
                        FILE *warn, gt_tunableop_stats *st, char *err, size_t errlen);

/* The report of an export file (device_model NULL: its only one). */
int gt_report_print_db(const char *export_db, const char *device_model, FILE *out, char *err,
                       size_t errlen);

#endif
