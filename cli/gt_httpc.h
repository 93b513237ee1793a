/* gt_httpc.h: a small HTTP/1.1 client over POSIX sockets (module prefix gt_httpc_).
 *
 * Owns what the gemmtune CLI needs to talk to the coordinator without
 * libcurl: plain http:// only, one request per connection (Connection: close),
 * name resolution through getaddrinfo (host names, IPv4, [IPv6] literals),
 * bounded connect and read waits, a cap on the response size, and bodies
 * framed by Content-Length, chunked transfer encoding or the end of the
 * connection. Responses are read whole into memory, or streamed to a file
 * that only appears under its final name once complete. */
#ifndef GT_HTTPC_H
#define GT_HTTPC_H

#include <stddef.h>
#include <stdint.h>

#define GT_HTTPC_CONNECT_TIMEOUT_MS 30000
#define GT_HTTPC_READ_TIMEOUT_MS 30000           /* longest silence while sending or reading */
#define GT_HTTPC_MAX_BODY ((uint64_t)1 << 30)    /* 1 GiB */

typedef struct gt_httpc_resp {
    int status;                 /* e.g. 200 */
    char content_type[128];     /* Content-Type header, "" when absent */
    char *body;                 /* malloc'd, NUL-terminated (binary data may hold NULs);
                                   never NULL after a successful call ("" when empty or
                                   when the body went to a file) */
    size_t body_len;
} gt_httpc_resp;

/* Process-wide settings; set them before threads issue requests.
 * A value <= 0 (or 0 for the cap) restores the default. */
void gt_httpc_set_timeouts(int connect_ms, int read_ms);
void gt_httpc_set_max_body(uint64_t max_bytes);

/* Sends one request to base_url ("http://host:port", optionally with a path
 * prefix) + path (starting with '/') and reads the whole response into resp.
 * body may be NULL when body_len is 0; content_type and bearer_token may be
 * NULL. Returns 0 when a complete response arrived, whatever its status, and
 * -1 with a message in err when it did not (bad URL, resolution, connect,
 * timeout, malformed or oversized response); resp is then empty. */
int gt_httpc_request(const char *base_url, const char *method, const char *path,
                     const char *content_type, const void *body, size_t body_len,
                     const char *bearer_token, gt_httpc_resp *resp, char *err, size_t errlen);

/* GETs base_url + path and, when the status is 2xx, streams the body into a
 * temp file next to out_path that is renamed to out_path once complete; the
 * byte count goes to *written. out_path must not exist (an existing file is
 * never replaced). A non-2xx response is read into resp->body instead (the
 * server's error) and no file is created. Return value as gt_httpc_request. */
int gt_httpc_download(const char *base_url, const char *path, const char *bearer_token,
                      const char *out_path, gt_httpc_resp *resp, uint64_t *written, char *err,
                      size_t errlen);

/* Frees the body and clears resp; safe on a zeroed or already freed resp. */
void gt_httpc_resp_free(gt_httpc_resp *resp);

#endif
