/* gt_secret.h: secrets (module prefix gt_secret_): unguessable random
 * credentials from the kernel's CSPRNG, SHA-256 to store only their digest,
 * and a comparison whose time does not depend on where two texts differ.
 * Used by the coordinator's worker sessions (server/session.c). */
#ifndef GT_SECRET_H
#define GT_SECRET_H

#include <stddef.h>
#include <stdint.h>

#define GT_SECRET_HEX 32 /* 128 random bits as lowercase hex */
#define GT_SHA256_HEX 64

/* Fills out[GT_SECRET_HEX + 1] with 128 bits from getrandom(2), as hex.
 * 0, or -1 when the kernel gives no randomness (never a weak fallback). */
int gt_secret_new(char *out);
/* SHA-256 of len bytes, as 64 lowercase hex digits and a NUL in
 * out[GT_SHA256_HEX + 1]. */
void gt_secret_sha256_hex(const void *data, size_t len, char *out);
/* 1 when a and b are equal; the time taken depends on the lengths only. */
int gt_secret_equal(const char *a, const char *b);

#endif
