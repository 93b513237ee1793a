/* status_page.c: serves the status page (web/index.html, app.js,
 * style.css), embedded into the binary at build time by
 * cmake/embed_web.cmake, so the page works offline and matches the API of
 * the binary that serves it. "/" is index.html. */
#include <stdio.h>
#include <string.h>

#include "http_priv.h"

struct gt_web_file {
    const char *name;
    const unsigned char *data;
    size_t len;
};
extern const struct gt_web_file gt_web_files[];

/* The embedded file a URL names: "/" or "/<name>" with no further slash. */
static const struct gt_web_file *find_file(const char *url)
{
    if (url[0] != '/')
        return NULL;
    const char *name = url[1] ? url + 1 : "index.html";
    if (strchr(name, '/'))
        return NULL;
    for (const struct gt_web_file *f = gt_web_files; f->name; f++)
        if (!strcmp(f->name, name))
            return f;
    return NULL;
}

int gt_http_is_static(const char *url) { return find_file(url) != NULL; }

static const char *content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {{".html", "text/html; charset=utf-8"},
                 {".js", "text/javascript; charset=utf-8"},
                 {".css", "text/css; charset=utf-8"},
                 {".svg", "image/svg+xml"},
                 {".png", "image/png"},
                 {".ico", "image/x-icon"}};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dot, types[i].ext))
            return types[i].type;
    return "application/octet-stream";
}

enum MHD_Result gt_http_static(gt_req *q, const char *url)
{
    const struct gt_web_file *f = find_file(url);
    if (!f)
        return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "no such resource %s", url);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(f->len, (void *)f->data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type(f->name));
    /* Revalidate each time: a new binary brings a new page. */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* The page loads nothing from elsewhere and runs no inline script. */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data:; style-src 'self';"
                            " script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    enum MHD_Result ret = gt_http_queue(q, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}
