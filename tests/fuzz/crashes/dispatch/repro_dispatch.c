/* repro_dispatch.c: sends one protocol message (argv[1]) to a real
 * coordinator dispatcher (gt_dispatch_start on tcp://127.0.0.1:0, store on a
 * temp file) and prints the reply: the reproducer driver for
 * register-mem-bytes-1e300.json, which makes server/dispatch.c:42 (get_ll)
 * convert 1e300 to long long, undefined behaviour that UBSan reports.
 * Not part of the build; from the repository root, after scripts/fuzz:
 *   clang -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
 *     -Iserver -Icommon -Iproto -I/usr/include/cjson \
 *     tests/fuzz/crashes/dispatch/repro_dispatch.c build-fuzz/libgt_server.a \
 *     build-fuzz/libgt_proto.a build-fuzz/libgt_common.a \
 *     -lnng -lmicrohttpd -lsqlite3 -lcjson -lm -lpthread -o /tmp/repro_dispatch
 *   /tmp/repro_dispatch "$(cat tests/fuzz/crashes/dispatch/register-mem-bytes-1e300.json)" */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_dispatch.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MESSAGE\n", argv[0]);
        return 2;
    }
    char err[256], db[] = "/tmp/repro-dispatch-XXXXXX";
    int fd = mkstemp(db);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    gt_store *s = gt_store_open(db, err, sizeof err);
    if (!s) {
        fprintf(stderr, "store: %s\n", err);
        return 1;
    }
    gt_dispatch_opts o = {.url = "tcp://127.0.0.1:0", .lease_ms = 30000, .heartbeat_ms = 5000,
                          .max_attempts = 3};
    gt_dispatch *d = gt_dispatch_start(s, &o, err, sizeof err);
    if (!d) {
        fprintf(stderr, "dispatch: %s\n", err);
        return 1;
    }
    nng_socket q;
    int rv = nng_req0_open(&q);
    if (rv == 0)
        rv = nng_dial(q, gt_dispatch_url(d), NULL, 0);
    if (rv == 0)
        rv = nng_send(q, argv[1], strlen(argv[1]), 0);
    char *buf = NULL;
    size_t len = 0;
    if (rv == 0)
        rv = nng_recv(q, &buf, &len, NNG_FLAG_ALLOC);
    if (rv != 0) {
        fprintf(stderr, "nng: %s\n", nng_strerror(rv));
        return 1;
    }
    printf("reply: %.*s\n", (int)len, buf);
    nng_free(buf, len);
    nng_close(q);
    gt_dispatch_stop(d);
    gt_store_close(s);
    unlink(db);
    return 0;
}
