/* gt-cuda-one: builds, validates and times given configs of one GEMM through
 * the cuda backend's vtable (what the worker's runner calls), each config in
 * turn in one process, so that a few configs compare under the same clocks
 * and a profiler can be pointed at one kernel:
 *
 *   gt-cuda-one [--type bf16|e4m3] [--repeats N] [--min-ms T] M N K CONFIG...
 *   ncu --kernel-name gt_mma --launch-skip 20 --launch-count 1 gt-cuda-one ...
 *
 * The problem is TN (A k x m, B k x n, column-major D), D bf16, f32
 * accumulation; CONFIG is a config's JSON ({"family":...}) or "lib" for the
 * backend's baseline (cuBLASLt's default). Prints one line per config:
 * median, min, relative error against the reference, TFLOP/s. Exit 0 when
 * every config built, validated and timed. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_backend.h"
#include "gt_problem.h"

static int usage(void)
{
    fprintf(stderr, "usage: gt-cuda-one [--type bf16|e4m3] [--repeats N] [--min-ms T] M N K CONFIG...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *type = "bf16";
    int repeats = 15, i = 1;
    double min_ms = 2.0;
    for (; i < argc && !strncmp(argv[i], "--", 2); i += 2) {
        if (i + 1 >= argc)
            return usage();
        if (!strcmp(argv[i], "--type"))
            type = argv[i + 1];
        else if (!strcmp(argv[i], "--repeats"))
            repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-ms"))
            min_ms = atof(argv[i + 1]);
        else
            return usage();
    }
    if (argc - i < 4 || repeats < 1 || (strcmp(type, "bf16") && strcmp(type, "e4m3")))
        return usage();
    gt_problem p;
    gt_problem_init(&p, atoll(argv[i]), atoll(argv[i + 1]), atoll(argv[i + 2]));
    p.trans_a = 'T';
    p.trans_b = 'N';
    p.a_type = p.b_type = strcmp(type, "bf16") ? GT_DT_F8E4M3 : GT_DT_BF16;
    p.c_type = p.d_type = GT_DT_BF16;
    p.compute_type = p.scale_type = GT_DT_F32;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);

    const gt_backend *bk = gt_bk_find("cuda");
    gt_bk_ctx *ctx = NULL;
    gt_bk_prob *pp = NULL;
    gt_bk_device dev;
    cJSON *cands = NULL, *base = NULL;
    char err[512] = "", label[64];
    int bad = 0;
    gt_problem_label(&p, label, sizeof label);
    if (!bk || bk->open(0, &ctx, &dev, err, sizeof err) != 0 ||
        bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        fprintf(stderr, "gt-cuda-one: %s\n", err);
        bad = 1;
        goto out;
    }
    printf("%s on %s\n", label, dev.model);
    for (int a = i + 3; a < argc; a++) {
        cJSON *cfg = NULL;
        if (!strcmp(argv[a], "lib")) {
            if (!base && bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err) != 0) {
                fprintf(stderr, "gt-cuda-one: enumerate: %s\n", err);
                bad = 1;
                continue;
            }
            cfg = cJSON_Duplicate(base, 1);
        } else {
            cfg = cJSON_Parse(argv[a]);
        }
        gt_bk_cand *c = NULL;
        double rel = -1;
        gt_timing t = {0};
        gt_timing_opts o = {.min_time_ms = min_ms, .warmup = 3, .repeats = repeats};
        if (!cfg)
            snprintf(err, sizeof err, "not JSON");
        if (!cfg || bk->build(pp, cfg, &c, err, sizeof err) != 0 ||
            bk->validate(pp, c, &rel, err, sizeof err) != 0 || bk->time(pp, c, &o, &t, err, sizeof err) != 0) {
            printf("FAIL %s: %s\n", argv[a], err);
            bad = 1;
        } else {
            printf("%10.2f us (min %.2f, spread %.3f, %d x %d calls)  err %.2e  %7.1f TFLOP/s  %s\n", t.median_us,
                   t.min_us, t.spread, t.repeats, t.iters, rel, p.flops / (t.median_us * 1e-6) / 1e12, argv[a]);
        }
        if (c)
            bk->release(c);
        cJSON_Delete(cfg);
    }
out:
    if (pp)
        bk->unprepare(pp);
    if (ctx)
        bk->close(ctx);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return bad;
}
