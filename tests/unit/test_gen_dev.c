/* test_gen_dev.c: the JSON form of gt_gen_dev (gen/gen_dev.c), the
 * "gen_device" a cuda worker registers with. Proven here:
 *   - to_json -> from_json gives back the same struct, bit for bit, for the
 *     H100 and A100 defaults, the MI200 limits and a device whose dram_bw is
 *     not a short decimal (what gt_cuda_gen_device computes from clocks);
 *   - the object has exactly one member per field, named as the field;
 *   - refused, with the member named in the reason, and *d untouched: not an
 *     object, a missing, unknown or repeated member, a string, a fraction
 *     where an integer belongs, values out of range (0 SMs, dram_bw 0, a
 *     number too large for a double), and the CUDA/HIP consistency rules. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_dev.h"
#include "gt_test.h"

/* Through the text, as it travels (register message, store column). */
static int round_trip(const gt_gen_dev *d)
{
    cJSON *j = gt_gen_dev_to_json(d);
    char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON *back = txt ? cJSON_Parse(txt) : NULL;
    gt_gen_dev e;
    char err[256];
    memset(&e, 0xff, sizeof e);
    int ok = back && gt_gen_dev_from_json(back, &e, err, sizeof err) == 0 && gt_gen_dev_equal(d, &e) &&
             strlen(txt) < GT_GEN_DEV_JSON_MAX && cJSON_GetArraySize(j) == 14;
    if (!ok)
        fprintf(stderr, "round trip failed: %s\n", txt ? txt : "(no text)");
    free(txt);
    cJSON_Delete(back);
    cJSON_Delete(j);
    return ok;
}

static void round_trips(void)
{
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    CHECK(round_trip(&d));
    gt_gen_dev_default(&d, 80, 108);
    CHECK(round_trip(&d));
    gt_gen_dev_hip(&d, 104);
    CHECK(round_trip(&d));
    /* gen_run.c: 2 x clock (kHz) x 1e3 x bus bits / 8 x 0.9 */
    gt_gen_dev_default(&d, 90, 114);
    d.dram_bw = 2.0 * 2619000 * 1e3 * 5120 / 8 * 0.9 * 1.0000001;
    d.tc_flops = 1.0 / 3.0 * 1e15;
    d.smem_optin = 232448 - 1024;
    d.l2_bytes = (int64_t)52428800 + 7;
    CHECK(round_trip(&d));
    /* equality sees the last bit of a double */
    gt_gen_dev e = d;
    CHECK(gt_gen_dev_equal(&d, &e));
    e.dram_bw = nextafter(e.dram_bw, 1e16);
    CHECK(!gt_gen_dev_equal(&d, &e));
    /* the member names are the field names (numbers once printed and read) */
    cJSON *o = gt_gen_dev_to_json(&d);
    char *t = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    free(t);
    cJSON_Delete(o);
    static const char *names[] = {"hip", "sm", "sms", "warp_size", "max_threads_block",
                                  "smem_block", "regs_sm", "max_regs_thread", "max_warps_sm",
                                  "dram_bw", "smem_optin", "smem_sm", "l2_bytes", "tc_flops"};
    int all = 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        all &= cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, names[i]));
    CHECK(all && cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "sms")) == 114);
    cJSON_Delete(j);
}

/* The H100 default's text with `from` replaced by `to`: refused, the
 * reason contains want, and the output is left alone. */
static int refused(const char *from, const char *to, const char *want)
{
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    cJSON *j = gt_gen_dev_to_json(&d);
    char *txt = cJSON_PrintUnformatted(j), buf[1024];
    cJSON_Delete(j);
    if (!txt)
        return 0;
    const char *p = strstr(txt, from);
    if (!p) {
        fprintf(stderr, "'%s' not in %s\n", from, txt);
        free(txt);
        return 0;
    }
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(p - txt), txt, to, p + strlen(from));
    free(txt);
    cJSON *in = cJSON_Parse(buf);
    gt_gen_dev out;
    memset(&out, 0x5a, sizeof out);
    unsigned char untouched[sizeof out];
    memcpy(untouched, &out, sizeof out);
    char err[256] = "";
    int rc = gt_gen_dev_from_json(in, &out, err, sizeof err);
    cJSON_Delete(in);
    int ok = rc == -1 && strstr(err, want) && !memcmp(untouched, &out, sizeof out);
    if (!ok)
        fprintf(stderr, "%s: rc %d, err '%s' (wanted '%s')\n", buf, rc, err, want);
    return ok;
}

static void refusals(void)
{
    char err[256];
    gt_gen_dev d;
    cJSON *arr = cJSON_Parse("[1]");
    CHECK(gt_gen_dev_from_json(arr, &d, err, sizeof err) == -1 && strstr(err, "object"));
    CHECK(gt_gen_dev_from_json(NULL, &d, err, sizeof err) == -1);
    cJSON_Delete(arr);
    CHECK(refused("\"sms\":132,", "", "sms missing"));
    CHECK(refused("\"sms\":132", "\"sms\":132,\"sms\":133", "sms given twice"));
    CHECK(refused("\"hip\":0", "\"hip\":0,\"tensor\":1", "unknown member 'tensor'"));
    CHECK(refused("\"sms\":132", "\"sms\":\"132\"", "sms must be an integer"));
    CHECK(refused("\"sms\":132", "\"sms\":132.5", "sms must be an integer"));
    CHECK(refused("\"sms\":132", "\"sms\":0", "sms must be an integer in 1..4096"));
    CHECK(refused("\"sms\":132", "\"sms\":null", "sms"));
    CHECK(refused("\"dram_bw\":2950000000000", "\"dram_bw\":0", "dram_bw must be a number"));
    CHECK(refused("\"tc_flops\":600000000000000", "\"tc_flops\":1e999", "tc_flops"));
    CHECK(refused("\"smem_optin\":232448", "\"smem_optin\":-1", "smem_optin"));
    CHECK(refused("\"l2_bytes\":52428800", "\"l2_bytes\":1e300", "l2_bytes"));
    CHECK(refused("\"warp_size\":32", "\"warp_size\":48", "warp_size=48"));
    CHECK(refused("\"warp_size\":32", "\"warp_size\":64", "hip=0"));
    CHECK(refused("\"sm\":90", "\"sm\":5", "sm >= 10"));
    CHECK(refused("\"hip\":0", "\"hip\":1", "hip=1"));
    CHECK(refused("\"hip\":0", "\"hip\":2", "hip must be an integer in 0..1"));
}

/* Arch names as workers register them. */
static void arch_names(void)
{
    CHECK(gt_gen_dev_sm_of("sm_90") == 90 && gt_gen_dev_sm_of("sm_80") == 80);
    CHECK(gt_gen_dev_sm_of("sm_100") == 100 && gt_gen_dev_sm_of("sm_1200") == 1200);
    CHECK(gt_gen_dev_sm_of("sm_9") == 0 && gt_gen_dev_sm_of("sm_90a") == 0 && gt_gen_dev_sm_of("sm_12000") == 0);
    CHECK(gt_gen_dev_sm_of("gfx90a") == 0 && gt_gen_dev_sm_of("") == 0 && gt_gen_dev_sm_of(NULL) == 0);
}

int main(void)
{
    RUN(round_trips);
    RUN(refusals);
    RUN(arch_names);
    return gt_test_done();
}
