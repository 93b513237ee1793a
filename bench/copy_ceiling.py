#!/usr/bin/env python3
"""The copy bandwidth a kernel of a given size can reach on this GPU: a device-to-device
copy, an elementwise kernel and a row sum of S bytes of traffic (what a decode GEMM moves),
timed per call with CUDA events over back-to-back launches and over a CUDA graph of the same
launches (from Python: a small kernel's plain time may be the host's; read the graph
column), median of repeats; beside the 1 GiB copy that bench/cuda_service.py's
roofline (and issue 18's "% of copy") divides by. It says how far below that figure a
16-100 MB GEMM must stay whatever its kernel does.

    python3 bench/copy_ceiling.py [MB ...]     (default: the Llama-3-8B fp8 and bf16
                                                decode GEMMs' traffic)
"""
import sys

import torch


def per_call(fn, calls, reps=15):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / calls)
    times.sort()
    return times[len(times) // 2]


def main():
    dev = torch.device("cuda", 0)
    # weights (m x k) + activations + output of the fp8 decode shapes at n = 1 and 16, then
    # their bf16 twins: the traffic a decode GEMM has to move
    sizes = [float(x) for x in sys.argv[1:]] or [16.8, 25.2, 58.7, 117.4, 525.3, 33.6, 50.4, 117.4, 234.9]
    big = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    bigo = torch.empty_like(big)
    ref_us = per_call(lambda: bigo.copy_(big), 1)
    ref = 2 * big.numel() / (ref_us * 1e-6)
    print(f"{torch.cuda.get_device_name(0)}: 1 GiB copy {ref / 1e12:.2f} TB/s (2 GiB of traffic, "
          f"{ref_us:.1f} us a call)")
    del big, bigo
    # a pool larger than L2 (50-60 MB on H100/H200) so that back-to-back copies do not
    # read from L2: each call takes the next buffer
    # a pool larger than L2 (50-60 MB on H100/H200) so that back-to-back calls do not
    # read from L2: each call takes the next buffer. Three kernels of S bytes of traffic:
    #   memcpy  dst.copy_(src), S/2 each way (cudaMemcpyAsync; in a graph a memcpy node)
    #   mul     torch.mul(src, 1, out=dst) on bf16, S/2 each way (an elementwise kernel)
    #   rowsum  a [rows, 4096] bf16 tensor of S bytes summed along its rows (reads S, writes
    #           rows: a decode GEMV's traffic without its multiply)
    print(f"{'kernel':>7} {'traffic MB':>10} {'plain us':>9} {'TB/s':>6} {'% of 1 GiB':>10} {'graph us':>9} "
          f"{'TB/s':>6} {'% of 1 GiB':>10}")
    for kind in ("memcpy", "mul", "rowsum"):
        for mb in sizes:
            nbytes = int(mb * 1e6) // 16384 * 16384
            per = nbytes if kind == "rowsum" else nbytes // 2  # bytes of each input buffer
            nbuf = max(2, int(512e6 // per) + 1)
            src = [torch.randn(per // 2, dtype=torch.bfloat16, device=dev) for _ in range(nbuf)]
            if kind == "rowsum":
                src = [x.view(-1, 4096) for x in src]
                dst = [torch.empty(x.shape[0], dtype=torch.bfloat16, device=dev) for x in src]
            else:
                dst = [torch.empty_like(x) for x in src]
            calls = 4 * nbuf

            def one(i):
                if kind == "memcpy":
                    dst[i].copy_(src[i])
                elif kind == "mul":
                    torch.mul(src[i], 1, out=dst[i])
                else:
                    torch.sum(src[i], dim=1, out=dst[i])

            def loop():
                for i in range(calls):
                    one(i % nbuf)

            loop()
            plain = per_call(loop, calls)
            g = torch.cuda.CUDAGraph()
            st = torch.cuda.Stream()
            st.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(st):
                loop()
            torch.cuda.current_stream().wait_stream(st)
            with torch.cuda.graph(g):
                loop()
            g.replay()
            graph = per_call(g.replay, calls)
            traffic = nbytes + (dst[0].numel() * 2 if kind == "rowsum" else 0)
            bw_p, bw_g = traffic / (plain * 1e-6), traffic / (graph * 1e-6)
            print(f"{kind:>7} {traffic / 1e6:10.1f} {plain:9.2f} {bw_p / 1e12:6.2f} {100 * bw_p / ref:9.1f}% "
                  f"{graph:9.2f} {bw_g / 1e12:6.2f} {100 * bw_g / ref:9.1f}%")
            del src, dst, g
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
