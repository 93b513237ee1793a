/* gen_dev.h: the JSON form of gt_gen_dev (module prefix gt_gen_dev_), the
 * device as the generated families' rules see it. A cuda worker sends it
 * when it registers ("gen_device", proto/PROTOCOL.md); the coordinator
 * stores it and runs the pruning rules with it (GET /v1/runs/{id}/space/...),
 * so both sides must agree on one encoding: this one.
 *
 * The object has exactly one member per gt_gen_dev field, named as the
 * field: hip, sm, sms, warp_size, max_threads_block, smem_block, regs_sm,
 * max_regs_thread, max_warps_sm, dram_bw, smem_optin, smem_sm, l2_bytes,
 * tc_flops. Integers are JSON integers; dram_bw (bytes/s) and tc_flops
 * (flop/s) are numbers printed so that they read back bit for bit (in the
 * object gt_gen_dev_to_json returns they are raw items holding that text:
 * print the object, do not read them with cJSON_GetNumberValue). */
#ifndef GEN_DEV_H
#define GEN_DEV_H

#include <stddef.h>

#include "gen_gemv.h"

struct cJSON;

/* Longest text gt_gen_dev_to_json's object prints to (unformatted), with
 * room to spare: 14 keys, 12 integers of at most 13 digits, 2 doubles of
 * at most 24 characters. */
#define GT_GEN_DEV_JSON_MAX 512

/* New object (caller frees with cJSON_Delete), or NULL out of memory. */
struct cJSON *gt_gen_dev_to_json(const gt_gen_dev *d);

/* Strict parse: every member required, no unknown or repeated member, each
 * value of its type and inside its range (what a real device can report:
 * the ranking model divides by dram_bw and tc_flops, the rules by the
 * limits). 0, or -1 with a reason naming the member and value in err; *d
 * is written only on success. */
int gt_gen_dev_from_json(const struct cJSON *j, gt_gen_dev *d, char *err, size_t errlen);

/* 1 when every field of a and b is equal (bit for bit for the doubles:
 * what the rules see), else 0. Padding is not compared, unlike memcmp. */
int gt_gen_dev_equal(const gt_gen_dev *a, const gt_gen_dev *b);

/* A CUDA arch name as workers register it, "sm_90" -> 90; 0 when s is NULL
 * or not of that form (2 to 4 digits, nothing after them). */
int gt_gen_dev_sm_of(const char *s);

#endif
