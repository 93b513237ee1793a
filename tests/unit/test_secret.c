/* test_secret.c: SHA-256 against the FIPS 180-4 / NIST test vectors (one,
 * two and many blocks, a tail of exactly 55 and 56 bytes), random
 * credentials (length, alphabet, no repeats) and the constant-time compare. */
#include <string.h>

#include "gt_secret.h"
#include "gt_test.h"

static void sha(const char *in, size_t len, const char *want)
{
    char out[GT_SHA256_HEX + 1];
    gt_secret_sha256_hex(in, len, out);
    CHECK_MSG(strcmp(out, want) == 0, "sha256 of %zu bytes: %s, want %s", len, out, want);
}

int main(void)
{
    sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes */
    sha(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    sha(two, 55, "aa353e009edbaebfc6e494c8d847696896cb8b398e0173a4b5c1b636292d87c7");
    static char million[1000000];
    memset(million, 'a', sizeof million);
    sha(million, sizeof million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

    char a[GT_SECRET_HEX + 1], b[GT_SECRET_HEX + 1];
    CHECK(gt_secret_new(a) == 0);
    CHECK(gt_secret_new(b) == 0);
    CHECK(strlen(a) == GT_SECRET_HEX);
    CHECK(strspn(a, "0123456789abcdef") == GT_SECRET_HEX);
    CHECK(strcmp(a, b) != 0);

    CHECK(gt_secret_equal("tok", "tok"));
    CHECK(!gt_secret_equal("tok", "tok2"));
    CHECK(!gt_secret_equal("tok2", "tok"));
    CHECK(!gt_secret_equal("tok", "toK"));
    CHECK(!gt_secret_equal("", "x"));
    CHECK(gt_secret_equal("", ""));
    return gt_test_done();
}
