#!/usr/bin/env python3
"""bench/cuda_service.py's "final g/l" column and count line: per GEMM, from the final phase's
paired re-times alone, the best cuBLASLt config's time over the best generated config's
(lib/gen, > 1: generated faster; the final's baseline is a cuBLASLt config too), '-' when the
final timed only one side; screen results, invalid ones and unparsable configs left out; and
the counts at >= 1.0 and >= 0.95 over the GEMMs with n >= 128."""

import contextlib
import io

from _bench_check import check, done  # bench/ on the import path first

import cuda_service  # noqa: E402


def res(pid, phase, cfg, us, valid=True, baseline=False):
    return {"problem_id": pid, "phase": phase, "config": cfg, "valid": valid, "time_us": us,
            "baseline": baseline}


LT = '{"algo_id":66,"tile":20}'
rows = [
    # GEMM 1: lib 100 (the baseline), 98 (a finalist); mma 95, mma_p 99 (one side: generated)
    res(1, "final", '{"algo_id":1}', 100.0, baseline=True), res(1, "final", LT, 98.0),
    res(1, "final", '{"family":"mma","bn":128}', 95.0), res(1, "final", '{"family":"mma","ctas":132}', 99.0),
    res(1, "screen", '{"family":"mma","bn":64}', 50.0),  # the screen's: not the final's
    res(1, "final", '{"family":"gemv","vec":4}', 10.0, valid=False),  # invalid: out
    # GEMM 2: lib 50; gemv 55.0 (generated slower: 50 / 55.0)
    res(2, "final", '{"algo_id":1}', 50.0, baseline=True), res(2, "final", '{"family":"gemv","vec":8}', 55.0),
    # GEMM 3: only cuBLASLt in the final
    res(3, "final", '{"algo_id":1}', 20.0, baseline=True), res(3, "final", LT, 19.0),
    # GEMM 4: lib 10 over gemv 9.6, but n = 16: in the column, not the counts
    res(4, "final", '{"algo_id":1}', 10.0, baseline=True), res(4, "final", {"family": "gemv"}, 9.6),
    # GEMM 5: lib 30 over mma_pp 31 (0.968: >= 0.95 only); an unparsable config left out
    res(5, "final", '{"algo_id":1}', 30.0, baseline=True),
    res(5, "final", '{"family":"mma","ctas":132,"pingpong":1}', 31.0), res(5, "final", "{", 1.0),
]
r = cuda_service.final_gen_lib(rows)
check("GEMMs whose final timed both sides", set(r) == {1, 2, 4, 5})
check("best lib over best generated, the baseline a lib config", abs(r[1] - 98.0 / 95.0) < 1e-12)
check("generated slower: below 1", abs(r[2] - 50.0 / 55.0) < 1e-12)
check("only cuBLASLt in the final: none", 3 not in r)
check("a config that does not parse is no side", abs(r[5] - 30.0 / 31.0) < 1e-12)

best = [{"problem_id": 1, "label": "bf16 TN 4096x4096x4096"}, {"problem_id": 2, "label": "bf16 TN 4096x128x4096"},
        {"problem_id": 3, "label": "bf16 TN 4096x512x4096"}, {"problem_id": 4, "label": "bf16 TN 4096x16x4096"},
        {"problem_id": 5, "label": "bf16 TN 14336x256x4096"}]
check("counts: >= 1.0, >= 0.95, of n >= 128 with both sides",
      cuda_service.final_gen_lib_counts(best, r) == (1, 2, 3))
check("no final: nothing counted", cuda_service.final_gen_lib_counts(best, {}) == (0, 0, 0))

# the table: the column per GEMM ('-' for GEMM 3) and the count line below it
run = {"best": [dict(b, time_us=None, state="done") for b in best], "weighted_uplift": None}
out = io.StringIO()
with contextlib.redirect_stdout(out):
    cuda_service.report(run, rows, None, None, 1, 1.0)
lines = out.getvalue().splitlines()
head = next((ln for ln in lines if "final g/l" in ln), "")
check("the table has the column after gen/lib",
      head != "" and head.index("gen/lib") < head.index("final g/l") < head.index("winner"))
table = {ln.split()[0]: ln.split() for ln in lines[lines.index(head) + 1:] if ln and ln[0].isdigit()}
# a row's tokens end in gen/lib, final g/l, winner
check("GEMM 1's final g/l", table.get("4096x4096x4096", [""] * 3)[-2] == "1.032")
check("GEMM 2's final g/l", table.get("4096x128x4096", [""] * 3)[-2] == "0.909")
check("GEMM 3's final g/l is '-'", table.get("4096x512x4096", [""] * 3)[-2] == "-")
check("the count line", "final, generated vs cuBLASLt's best finalist: >= 1.0 on 1, >= 0.95 on 2 of 3 "
      "GEMMs with n >= 128" in lines)

done()
