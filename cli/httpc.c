/* httpc.c: the HTTP/1.1 client of gt_httpc.h.
 *
 * Owns URL parsing, connecting with a deadline, sending one request and
 * reading one response (status line, headers, a body framed by
 * Content-Length, chunked coding or the end of the connection) into memory or
 * a file. Sockets are non-blocking and every wait goes through poll(2) so no
 * step can hang past its timeout; sends use MSG_NOSIGNAL so a peer that goes
 * away yields an error, not SIGPIPE. */
#include "gt_httpc.h"

#include "gt_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_HEADER_LINE 8192
#define MAX_HEADER_BYTES 65536
#define MAX_HEADERS 128

static int g_connect_ms = GT_HTTPC_CONNECT_TIMEOUT_MS;
static int g_read_ms = GT_HTTPC_READ_TIMEOUT_MS;
static uint64_t g_max_body = GT_HTTPC_MAX_BODY;

void gt_httpc_set_timeouts(int connect_ms, int read_ms)
{
    g_connect_ms = connect_ms > 0 ? connect_ms : GT_HTTPC_CONNECT_TIMEOUT_MS;
    g_read_ms = read_ms > 0 ? read_ms : GT_HTTPC_READ_TIMEOUT_MS;
}

void gt_httpc_set_max_body(uint64_t max_bytes)
{
    g_max_body = max_bytes ? max_bytes : GT_HTTPC_MAX_BODY;
}

void gt_httpc_resp_free(gt_httpc_resp *resp)
{
    if (!resp)
        return;
    free(resp->body);
    memset(resp, 0, sizeof *resp);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- URL ---- */

typedef struct url {
    char host[256];       /* without brackets */
    char port[8];
    char hostport[300];   /* for Host: and messages, brackets kept for IPv6 */
    char prefix[1024];    /* path prefix without trailing '/', may be "" */
} url;

static int parse_url(const char *base, url *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof *u);
    if (!base || !*base) {
        set_err(err, errlen, "empty server URL");
        return -1;
    }
    if (strncasecmp(base, "https://", 8) == 0) {
        set_err(err, errlen, "%s: https is not supported (use http://, e.g. through a TLS proxy)",
                base);
        return -1;
    }
    if (strncasecmp(base, "http://", 7) != 0) {
        set_err(err, errlen, "%s: server URL must start with http://", base);
        return -1;
    }
    const char *p = base + 7;
    const char *auth_end = p + strcspn(p, "/?#");
    if (memchr(p, '@', (size_t)(auth_end - p))) {
        set_err(err, errlen, "%s: user info in the URL is not supported (use --token)", base);
        return -1;
    }
    const char *h, *he, *port = NULL;
    if (*p == '[') {
        h = p + 1;
        he = memchr(h, ']', (size_t)(auth_end - h));
        if (!he) {
            set_err(err, errlen, "%s: unterminated [IPv6] literal", base);
            return -1;
        }
        if (he + 1 < auth_end) {
            if (he[1] != ':') {
                set_err(err, errlen, "%s: bad characters after ']'", base);
                return -1;
            }
            port = he + 2;
        }
    } else {
        h = p;
        he = memchr(p, ':', (size_t)(auth_end - p));
        if (he)
            port = he + 1;
        else
            he = auth_end;
    }
    size_t hl = (size_t)(he - h);
    if (hl == 0 || hl >= sizeof u->host) {
        set_err(err, errlen, "%s: missing or too long host", base);
        return -1;
    }
    memcpy(u->host, h, hl);
    if (port) {
        size_t pl = (size_t)(auth_end - port);
        long v = 0;
        for (size_t i = 0; i < pl; i++) {
            if (port[i] < '0' || port[i] > '9' || v > 65535) {
                v = -1;
                break;
            }
            v = v * 10 + (port[i] - '0');
        }
        if (pl == 0 || v < 1 || v > 65535) {
            set_err(err, errlen, "%s: bad port", base);
            return -1;
        }
        snprintf(u->port, sizeof u->port, "%ld", v);
    } else {
        snprintf(u->port, sizeof u->port, "80");
    }
    int v6 = strchr(u->host, ':') != NULL;
    snprintf(u->hostport, sizeof u->hostport, "%s%s%s:%s", v6 ? "[" : "", u->host, v6 ? "]" : "",
             u->port);
    if (*auth_end == '?' || *auth_end == '#') {
        set_err(err, errlen, "%s: a query or fragment in the server URL is not supported", base);
        return -1;
    }
    size_t pl = strlen(auth_end);
    while (pl > 0 && auth_end[pl - 1] == '/')
        pl--;
    if (pl >= sizeof u->prefix) {
        set_err(err, errlen, "%s: path prefix too long", base);
        return -1;
    }
    memcpy(u->prefix, auth_end, pl);
    return 0;
}

/* A header value or request target must not smuggle in line breaks. */
static int safe_text(const char *s, int allow_space)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f || (!allow_space && c == ' '))
            return 0;
    }
    return 1;
}

/* ---- socket I/O with deadlines ---- */

static int wait_fd(int fd, short events, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    double end = gt_mono_ms() + timeout_ms;
    for (;;) {
        int left = (int)(end - gt_mono_ms());
        if (left < 0)
            left = 0;
        int rc = poll(&p, 1, left);
        if (rc > 0)
            return 1;
        if (rc == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

static int connect_to(const url *u, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(u->host, u->port, &hints, &res);
    if (gai != 0) {
        set_err(err, errlen, "resolve %s: %s", u->host,
                gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        return -1;
    }
    int fd = -1, last = 0, timed_out = 0;
    double end = gt_mono_ms() + g_connect_ms;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS) {
            int left = (int)(end - gt_mono_ms());
            int w = wait_fd(fd, POLLOUT, left > 0 ? left : 0);
            if (w > 0) {
                int soerr = 0;
                socklen_t sl = sizeof soerr;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
                    break;
                last = soerr ? soerr : errno;
            } else if (w == 0) {
                timed_out = 1;
                last = ETIMEDOUT;
            } else {
                last = errno;
            }
        } else {
            last = errno;
        }
        close(fd);
        fd = -1;
        if (timed_out)
            break;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (timed_out)
            set_err(err, errlen, "connect to %s: timed out after %d ms", u->hostport, g_connect_ms);
        else
            set_err(err, errlen, "connect to %s: %s", u->hostport,
                    strerror(last ? last : ECONNREFUSED));
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n, char *err, size_t errlen)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(fd, POLLOUT, g_read_ms);
            if (r == 0) {
                set_err(err, errlen, "send: timed out after %d ms", g_read_ms);
                return -1;
            }
            if (r < 0) {
                set_err(err, errlen, "send: %s", strerror(errno));
                return -1;
            }
            continue;
        }
        set_err(err, errlen, "send: %s", strerror(w < 0 ? errno : EPIPE));
        return -1;
    }
    return 0;
}

/* Buffered reader over the socket. */
typedef struct reader {
    int fd;
    size_t pos, len;
    int eof;
    char buf[65536];
} reader;

/* Reads more bytes: 1 got some, 0 end of stream, -1 error. */
static int rd_fill(reader *r, char *err, size_t errlen)
{
    if (r->eof)
        return 0;
    if (r->pos > 0 && r->pos == r->len)
        r->pos = r->len = 0;
    if (r->len == sizeof r->buf) {
        if (r->pos == 0) {
            set_err(err, errlen, "response line too long");
            return -1;
        }
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    for (;;) {
        ssize_t n = recv(r->fd, r->buf + r->len, sizeof r->buf - r->len, 0);
        if (n > 0) {
            r->len += (size_t)n;
            return 1;
        }
        if (n == 0) {
            r->eof = 1;
            return 0;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = wait_fd(r->fd, POLLIN, g_read_ms);
            if (w == 0) {
                set_err(err, errlen, "read: no data for %d ms", g_read_ms);
                return -1;
            }
            if (w < 0) {
                set_err(err, errlen, "read: %s", strerror(errno));
                return -1;
            }
            continue;
        }
        set_err(err, errlen, "read: %s", strerror(errno));
        return -1;
    }
}

/* Reads one line (CRLF or LF), without the terminator, into line. */
static int rd_line(reader *r, char *line, size_t cap, size_t *total, const char *what, char *err,
                   size_t errlen)
{
    for (;;) {
        char *nl = memchr(r->buf + r->pos, '\n', r->len - r->pos);
        if (nl) {
            size_t n = (size_t)(nl - (r->buf + r->pos));
            size_t used = n + 1;
            if (n > 0 && r->buf[r->pos + n - 1] == '\r')
                n--;
            if (n >= cap) {
                set_err(err, errlen, "%s: line too long", what);
                return -1;
            }
            memcpy(line, r->buf + r->pos, n);
            line[n] = '\0';
            r->pos += used;
            if (total) {
                *total += used;
                if (*total > MAX_HEADER_BYTES) {
                    set_err(err, errlen, "%s: more than %d bytes", what, MAX_HEADER_BYTES);
                    return -1;
                }
            }
            return 0;
        }
        if (r->len - r->pos >= cap) {
            set_err(err, errlen, "%s: line too long", what);
            return -1;
        }
        int f = rd_fill(r, err, errlen);
        if (f < 0)
            return -1;
        if (f == 0) {
            set_err(err, errlen, "%s: connection closed early", what);
            return -1;
        }
    }
}

/* Where a body goes: memory or a file descriptor, with the size cap. */
typedef struct sink {
    gt_str *mem;
    int fd;
    uint64_t total, max;
} sink;

static int sink_put(sink *s, const char *p, size_t n, char *err, size_t errlen)
{
    if (s->total + n > s->max) {
        set_err(err, errlen, "response body larger than the %llu byte limit",
                (unsigned long long)s->max);
        return -1;
    }
    s->total += n;
    if (s->mem) {
        if (gt_str_append(s->mem, p, n) != 0) {
            set_err(err, errlen, "response body: out of memory");
            return -1;
        }
        return 0;
    }
    while (n > 0) {
        ssize_t w = write(s->fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            set_err(err, errlen, "write: %s", strerror(errno));
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Moves exactly n body bytes from the stream to the sink. */
static int rd_body_n(reader *r, uint64_t n, sink *s, char *err, size_t errlen)
{
    uint64_t want = n;
    while (n > 0) {
        if (r->pos == r->len) {
            int f = rd_fill(r, err, errlen);
            if (f < 0)
                return -1;
            if (f == 0) {
                set_err(err, errlen, "connection closed after %llu of %llu body bytes",
                        (unsigned long long)(want - n), (unsigned long long)want);
                return -1;
            }
        }
        size_t take = r->len - r->pos;
        if (take > n)
            take = (size_t)n;
        if (sink_put(s, r->buf + r->pos, take, err, errlen) != 0)
            return -1;
        r->pos += take;
        n -= take;
    }
    return 0;
}

static int rd_body_chunked(reader *r, sink *s, char *err, size_t errlen)
{
    char line[MAX_HEADER_LINE];
    for (;;) {
        if (rd_line(r, line, sizeof line, NULL, "chunk size", err, errlen) != 0)
            return -1;
        uint64_t size = 0;
        int digits = 0;
        const char *p = line;
        for (; *p; p++, digits++) {
            int d;
            if (*p >= '0' && *p <= '9')
                d = *p - '0';
            else if (*p >= 'a' && *p <= 'f')
                d = *p - 'a' + 10;
            else if (*p >= 'A' && *p <= 'F')
                d = *p - 'A' + 10;
            else
                break;
            if (size > (UINT64_MAX >> 4)) {
                set_err(err, errlen, "chunk size overflows");
                return -1;
            }
            size = size * 16 + (uint64_t)d;
        }
        while (*p == ' ' || *p == '\t')
            p++;
        if (digits == 0 || (*p && *p != ';')) {
            set_err(err, errlen, "bad chunk size line '%.40s'", line);
            return -1;
        }
        if (size == 0)
            break;
        if (size > s->max - s->total) {
            set_err(err, errlen, "response body larger than the %llu byte limit",
                    (unsigned long long)s->max);
            return -1;
        }
        if (rd_body_n(r, size, s, err, errlen) != 0)
            return -1;
        if (rd_line(r, line, sizeof line, NULL, "chunk end", err, errlen) != 0)
            return -1;
        if (line[0]) {
            set_err(err, errlen, "chunk not followed by CRLF");
            return -1;
        }
    }
    /* Trailer fields up to the empty line; their contents are not used. */
    size_t total = 0;
    for (;;) {
        if (rd_line(r, line, sizeof line, &total, "chunked trailer", err, errlen) != 0)
            return -1;
        if (!line[0])
            return 0;
    }
}

static int rd_body_close(reader *r, sink *s, char *err, size_t errlen)
{
    for (;;) {
        if (r->pos < r->len) {
            if (sink_put(s, r->buf + r->pos, r->len - r->pos, err, errlen) != 0)
                return -1;
            r->pos = r->len;
        }
        int f = rd_fill(r, err, errlen);
        if (f < 0)
            return -1;
        if (f == 0)
            return 0;
    }
}

/* Response head as far as framing needs it. */
typedef struct head {
    int status;
    int chunked;
    int has_length;
    uint64_t length;
    char content_type[128];
} head;

static void trim_copy(char *dst, size_t cap, const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static int rd_head(reader *r, head *h, char *err, size_t errlen)
{
    char line[MAX_HEADER_LINE];
    for (;;) {
        size_t total = 0;
        int nheaders = 0;
        memset(h, 0, sizeof *h);
        if (rd_line(r, line, sizeof line, &total, "status line", err, errlen) != 0)
            return -1;
        int minor, status, nf;
        char sp = ' ';
        nf = sscanf(line, "HTTP/1.%d %3d%c", &minor, &status, &sp);
        if (nf < 2 || sp != ' ' || status < 100 || status > 999) {
            set_err(err, errlen, "not an HTTP response: '%.60s'", line);
            return -1;
        }
        h->status = status;
        for (;;) {
            if (rd_line(r, line, sizeof line, &total, "response headers", err, errlen) != 0)
                return -1;
            if (!line[0])
                break;
            if (++nheaders > MAX_HEADERS) {
                set_err(err, errlen, "more than %d response headers", MAX_HEADERS);
                return -1;
            }
            char *colon = strchr(line, ':');
            if (!colon) {
                set_err(err, errlen, "bad response header '%.60s'", line);
                return -1;
            }
            *colon = '\0';
            const char *v = colon + 1;
            if (strcasecmp(line, "Content-Length") == 0) {
                char tmp[32];
                trim_copy(tmp, sizeof tmp, v);
                int64_t len;
                if (gt_parse_i64(tmp, &len) != 0 || len < 0 ||
                    (h->has_length && h->length != (uint64_t)len)) {
                    set_err(err, errlen, "bad Content-Length '%.40s'", v);
                    return -1;
                }
                h->has_length = 1;
                h->length = (uint64_t)len;
            } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
                char tmp[128];
                trim_copy(tmp, sizeof tmp, v);
                /* chunked must be the last coding; anything else we cannot decode. */
                size_t n = strlen(tmp);
                if (n >= 7 && strcasecmp(tmp + n - 7, "chunked") == 0)
                    h->chunked = 1;
                else if (strcasecmp(tmp, "identity") != 0) {
                    set_err(err, errlen, "unsupported Transfer-Encoding '%s'", tmp);
                    return -1;
                }
            } else if (strcasecmp(line, "Content-Type") == 0) {
                trim_copy(h->content_type, sizeof h->content_type, v);
            }
        }
        /* Interim responses (100 Continue...) precede the real one. */
        if (status >= 100 && status < 200 && status != 101)
            continue;
        return 0;
    }
}

/* Creates a temp file next to path for a download. */
static int tmp_open(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen)
{
    if (snprintf(tmp, tmplen, "%s.tmp-XXXXXX", path) >= (int)tmplen) {
        set_err(err, errlen, "%s: path too long", path);
        tmp[0] = '\0';
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(errno));
        tmp[0] = '\0';
        return -1;
    }
    if (fchmod(fd, 0644) != 0) {
        set_err(err, errlen, "%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        tmp[0] = '\0';
        return -1;
    }
    return fd;
}

/* Gives the complete temp file its final name, never replacing a file. */
static int tmp_publish(const char *tmp, const char *path, char *err, size_t errlen)
{
    if (link(tmp, path) == 0) {
        unlink(tmp);
        return 0;
    }
    if (errno == EEXIST) {
        set_err(err, errlen, "%s: exists", path);
        return -1;
    }
    /* Filesystems without hard links: check, then rename. */
    struct stat sb;
    if ((errno == EPERM || errno == ENOTSUP || errno == ENOSYS) && lstat(path, &sb) != 0 &&
        rename(tmp, path) == 0)
        return 0;
    set_err(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
}

static int do_request(const char *base_url, const char *method, const char *path,
                      const char *content_type, const void *body, size_t body_len,
                      const char *bearer_token, const char *out_path, gt_httpc_resp *resp,
                      uint64_t *written, char *err, size_t errlen)
{
    url u;
    gt_str req, mem;
    reader *r = NULL;
    int fd = -1, ffd = -1;
    char tmp[PATH_MAX] = "";
    char send_err[256] = "";
    gt_str_init(&req);
    gt_str_init(&mem);
    if (resp)
        memset(resp, 0, sizeof *resp);
    if (written)
        *written = 0;

    if (!resp || !method || !path) {
        set_err(err, errlen, "http: method, path and response are required");
        return -1;
    }
    if (parse_url(base_url, &u, err, errlen) != 0)
        return -1;
    if (path[0] != '/' || !safe_text(path, 0) || !safe_text(method, 0) || !method[0]) {
        set_err(err, errlen, "http: bad method or path '%s %s'", method, path);
        return -1;
    }
    if (!safe_text(content_type, 1) || !safe_text(bearer_token, 1)) {
        set_err(err, errlen, "http: control characters in a header value");
        return -1;
    }
    if (body_len > 0 && !body) {
        set_err(err, errlen, "http: body_len without body");
        return -1;
    }
    if (out_path) {
        struct stat sb;
        if (lstat(out_path, &sb) == 0) {
            set_err(err, errlen, "%s: exists", out_path);
            return -1;
        }
    }

    gt_str_printf(&req, "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: gemmtune\r\n"
                        "Accept: */*\r\nConnection: close\r\n",
                  method, u.prefix, path, u.hostport);
    if (bearer_token && *bearer_token)
        gt_str_printf(&req, "Authorization: Bearer %s\r\n", bearer_token);
    if (content_type && *content_type)
        gt_str_printf(&req, "Content-Type: %s\r\n", content_type);
    /* Methods that carry a body always state its length, even 0. */
    if (body_len > 0 || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
        strcmp(method, "PATCH") == 0)
        gt_str_printf(&req, "Content-Length: %zu\r\n", body_len);
    gt_str_append(&req, "\r\n", 2);
    if (req.oom) {
        set_err(err, errlen, "http: out of memory");
        goto fail;
    }

    fd = connect_to(&u, err, errlen);
    if (fd < 0)
        goto fail;
    /* A server may answer (413, 401) and close before taking the whole body;
     * keep the send error but still try to read that answer. */
    if (send_all(fd, req.s, req.len, send_err, sizeof send_err) == 0 && body_len > 0)
        (void)send_all(fd, body, body_len, send_err, sizeof send_err);
    if (send_err[0])
        shutdown(fd, SHUT_WR);

    r = malloc(sizeof *r);
    if (!r) {
        set_err(err, errlen, "http: out of memory");
        goto fail;
    }
    r->fd = fd;
    r->pos = r->len = 0;
    r->eof = 0;
    head h;
    char msg[256];
    if (rd_head(r, &h, msg, sizeof msg) != 0) {
        if (send_err[0])
            set_err(err, errlen, "%s %s%s: %s", method, u.hostport, path, send_err);
        else
            set_err(err, errlen, "%s %s%s: %s", method, u.hostport, path, msg);
        goto fail;
    }
    resp->status = h.status;
    snprintf(resp->content_type, sizeof resp->content_type, "%s", h.content_type);

    sink s = {.mem = &mem, .fd = -1, .total = 0, .max = g_max_body};
    int to_file = out_path && h.status >= 200 && h.status < 300;
    if (to_file) {
        ffd = tmp_open(out_path, tmp, sizeof tmp, err, errlen);
        if (ffd < 0)
            goto fail;
        s.mem = NULL;
        s.fd = ffd;
    }
    int rc = 0;
    int no_body = strcmp(method, "HEAD") == 0 || h.status == 204 || h.status == 304;
    if (no_body)
        rc = 0;
    else if (h.chunked)
        rc = rd_body_chunked(r, &s, msg, sizeof msg);
    else if (h.has_length) {
        if (h.length > s.max) {
            snprintf(msg, sizeof msg, "response body of %llu bytes exceeds the %llu byte limit",
                     (unsigned long long)h.length, (unsigned long long)s.max);
            rc = -1;
        } else {
            rc = rd_body_n(r, h.length, &s, msg, sizeof msg);
        }
    } else
        rc = rd_body_close(r, &s, msg, sizeof msg);
    if (rc != 0) {
        set_err(err, errlen, "%s %s%s: HTTP %d: %s", method, u.hostport, path, h.status, msg);
        goto fail;
    }
    if (to_file) {
        if (fsync(ffd) != 0) {
            set_err(err, errlen, "%s: sync: %s", tmp, strerror(errno));
            goto fail;
        }
        int c = close(ffd);
        ffd = -1;
        if (c != 0) {
            set_err(err, errlen, "%s: close: %s", tmp, strerror(errno));
            goto fail;
        }
        if (tmp_publish(tmp, out_path, err, errlen) != 0)
            goto fail;
        tmp[0] = '\0';
        if (written)
            *written = s.total;
    }
    if (!mem.s) {
        mem.s = calloc(1, 1);
        if (!mem.s) {
            set_err(err, errlen, "http: out of memory");
            goto fail;
        }
    }
    resp->body = mem.s;
    resp->body_len = mem.len;
    close(fd);
    free(r);
    gt_str_free(&req);
    return 0;

fail:
    if (ffd >= 0)
        close(ffd);
    if (tmp[0])
        unlink(tmp);
    if (fd >= 0)
        close(fd);
    free(r);
    gt_str_free(&req);
    gt_str_free(&mem);
    memset(resp, 0, sizeof *resp);
    return -1;
}

int gt_httpc_request(const char *base_url, const char *method, const char *path,
                     const char *content_type, const void *body, size_t body_len,
                     const char *bearer_token, gt_httpc_resp *resp, char *err, size_t errlen)
{
    return do_request(base_url, method, path, content_type, body, body_len, bearer_token, NULL,
                      resp, NULL, err, errlen);
}

int gt_httpc_download(const char *base_url, const char *path, const char *bearer_token,
                      const char *out_path, gt_httpc_resp *resp, uint64_t *written, char *err,
                      size_t errlen)
{
    if (!out_path || !*out_path) {
        set_err(err, errlen, "download: output path required");
        return -1;
    }
    return do_request(base_url, "GET", path, NULL, NULL, 0, bearer_token, out_path, resp, written,
                      err, errlen);
}
