/* gpu_state.c: the summary of a job's GPU readings and its JSON form
 * (gt_gpu_state.h). */
#include "gt_gpu_state.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gt_gpu_acc_init(gt_gpu_acc *a)
{
    memset(a, 0, sizeof *a);
    a->round = -1;
}

void gt_gpu_acc_free(gt_gpu_acc *a)
{
    free(a->clk);
    gt_gpu_acc_init(a);
}

int gt_gpu_acc_add(gt_gpu_acc *a, int round, const gt_gpu_sample *s)
{
    /* a reading without a clock (a driver that answered 0) says nothing */
    if (!(s->sm_mhz > 0 && s->sm_mhz <= 10000) || !(s->power_w >= 0 && s->power_w <= 10000) ||
        !(s->temp_c >= -100 && s->temp_c <= 300))
        return 0;
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 64;
        double *v = realloc(a->clk, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        a->clk = v;
        a->cap = cap;
    }
    if (round != a->round) {
        a->round = round;
        a->rounds++;
        a->cur_capped = 0;
    }
    a->clk[a->n++] = s->sm_mhz;
    if (a->n == 1 || s->power_w > a->pmax)
        a->pmax = s->power_w;
    if (a->n == 1 || s->temp_c > a->tmax)
        a->tmax = s->temp_c;
    /* a round counts once, however many of its readings saw the cap */
    if ((s->reasons & GT_GPU_REASONS_CAP) && !a->cur_capped) {
        a->cur_capped = 1;
        a->capped++;
    }
    return 0;
}

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

void gt_gpu_acc_state(const gt_gpu_acc *a, gt_gpu_state *out)
{
    memset(out, 0, sizeof *out);
    if (a->n == 0)
        return;
    /* sorted in place: the order of the readings is not kept */
    qsort(a->clk, (size_t)a->n, sizeof *a->clk, cmp_dbl);
    out->samples = a->n;
    out->rounds = a->rounds;
    out->sm_clock_min_mhz = a->clk[0];
    out->sm_clock_median_mhz =
        a->n % 2 ? a->clk[a->n / 2] : (a->clk[a->n / 2 - 1] + a->clk[a->n / 2]) / 2;
    out->power_max_w = a->pmax;
    out->temp_max_c = a->tmax;
    out->throttled_frac = a->rounds > 0 ? (double)a->capped / a->rounds : 0;
}

cJSON *gt_gpu_state_to_json(const gt_gpu_state *s)
{
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddNumberToObject(j, "samples", s->samples) ||
        !cJSON_AddNumberToObject(j, "rounds", s->rounds) ||
        !cJSON_AddNumberToObject(j, "sm_clock_min_mhz", s->sm_clock_min_mhz) ||
        !cJSON_AddNumberToObject(j, "sm_clock_median_mhz", s->sm_clock_median_mhz) ||
        !cJSON_AddNumberToObject(j, "power_max_w", s->power_max_w) ||
        !cJSON_AddNumberToObject(j, "temp_max_c", s->temp_max_c) ||
        !cJSON_AddNumberToObject(j, "throttled_frac", s->throttled_frac)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* A finite number field in [lo, hi]. */
static int num_in(const cJSON *j, const char *name, double lo, double hi, double *out, char *err,
                  size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi) {
        snprintf(err, errlen, "gpu_state.%s: missing or not a number in [%g, %g]", name, lo, hi);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

int gt_gpu_state_from_json(const cJSON *j, gt_gpu_state *s, char *err, size_t errlen)
{
    double samples, rounds;
    memset(s, 0, sizeof *s);
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "gpu_state: not an object");
        return -1;
    }
    if (num_in(j, "samples", 1, 1e9, &samples, err, errlen) ||
        num_in(j, "rounds", 1, 1e9, &rounds, err, errlen) ||
        num_in(j, "sm_clock_min_mhz", 1e-9, 10000, &s->sm_clock_min_mhz, err, errlen) ||
        num_in(j, "sm_clock_median_mhz", 1e-9, 10000, &s->sm_clock_median_mhz, err, errlen) ||
        num_in(j, "power_max_w", 0, 10000, &s->power_max_w, err, errlen) ||
        num_in(j, "temp_max_c", -100, 300, &s->temp_max_c, err, errlen) ||
        num_in(j, "throttled_frac", 0, 1, &s->throttled_frac, err, errlen))
        goto fail;
    if (samples != floor(samples) || rounds != floor(rounds) || rounds > samples) {
        snprintf(err, errlen, "gpu_state: samples and rounds must be integers, rounds <= samples");
        goto fail;
    }
    if (s->sm_clock_min_mhz > s->sm_clock_median_mhz) {
        snprintf(err, errlen, "gpu_state: sm_clock_min_mhz above sm_clock_median_mhz");
        goto fail;
    }
    s->samples = (int)samples;
    s->rounds = (int)rounds;
    return 0;
fail:
    memset(s, 0, sizeof *s);
    return -1;
}
