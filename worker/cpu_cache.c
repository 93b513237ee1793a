/* cpu_cache.c: the CPU backend's compiler and compile cache.
 *
 * A kernel's object is stored under its key, the FNV-1a 64 hash of the
 * source, the flags, the compiler command and version and the CPU's model
 * and ISA flags (objects are built with -march=native, so a cache shared by
 * different machines must not hand one CPU's code to another). Compiles go
 * to temporary names and are renamed into place, so workers sharing the
 * directory never load a half-written object; two workers compiling the same
 * key at once both succeed and the last rename wins with identical bytes.
 *
 * Directory: $GEMMTUNE_CACHE_DIR, else $XDG_CACHE_HOME/gemmtune/cpu, else
 * $HOME/.cache/gemmtune/cpu, resolved at every load so a test (or an
 * operator) can move it with setenv. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "gt_bk_cpu.h"
#include "gt_config.h"

#ifndef GT_CC
#define GT_CC "cc"
#endif

#define COMPILE_TIMEOUT_MS 120000

/* -std=c11 turns off fp contraction in gcc; the micro-kernel wants FMAs. */
static const char *const k_flags[] = {"-std=c11", "-O3", "-march=native", "-ffp-contract=fast",
                                      "-fPIC", "-shared", "-fopenmp", NULL};

static atomic_long g_hits, g_misses;
static atomic_long g_seq;

int gt_bk_cpu_cache_stats(long *hits, long *misses)
{
    if (hits)
        *hits = atomic_load(&g_hits);
    if (misses)
        *misses = atomic_load(&g_misses);
    return 0;
}

/* First "model name" and "flags"/"Features" lines of /proc/cpuinfo, hashed. */
static uint64_t machine_key(void)
{
    uint64_t h = GT_FNV_SEED;
    struct utsname u;
    if (uname(&u) == 0)
        h = gt_fnv1a64(u.machine, strlen(u.machine), h);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return h;
    char line[8192];
    int got_model = 0, got_flags = 0;
    while ((!got_model || !got_flags) && fgets(line, sizeof line, f)) {
        if (!got_model && strncmp(line, "model name", 10) == 0) {
            h = gt_fnv1a64(line, strlen(line), h);
            got_model = 1;
        } else if (!got_flags && (strncmp(line, "flags", 5) == 0 ||
                                  strncmp(line, "Features", 8) == 0)) {
            h = gt_fnv1a64(line, strlen(line), h);
            got_flags = 1;
        }
    }
    fclose(f);
    return h;
}

int gt_cpu_tool_init(gt_cpu_tool *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    const char *cc = getenv("GEMMTUNE_CC");
    if (!cc || !*cc)
        cc = GT_CC;
    if (snprintf(t->cc_buf, sizeof t->cc_buf, "%s", cc) >= (int)sizeof t->cc_buf) {
        snprintf(err, errlen, "cpu backend: compiler command too long: %.64s...", cc);
        return -1;
    }
    /* Split on spaces so "ccache cc" works; no quoting, no shell. */
    char *save = NULL;
    for (char *tok = strtok_r(t->cc_buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (t->cc_argc == (int)(sizeof t->cc_argv / sizeof t->cc_argv[0]) - 1) {
            snprintf(err, errlen, "cpu backend: compiler command '%s' has too many words", cc);
            return -1;
        }
        t->cc_argv[t->cc_argc++] = tok;
    }
    if (t->cc_argc == 0) {
        snprintf(err, errlen, "cpu backend: empty compiler command");
        return -1;
    }
    char *argv[10];
    int n = 0;
    for (int i = 0; i < t->cc_argc; i++)
        argv[n++] = t->cc_argv[i];
    argv[n++] = "--version";
    argv[n] = NULL;
    char out[1024];
    int rc = gt_run_argv(argv, out, sizeof out, 30000);
    if (rc != 0) {
        snprintf(err, errlen, "cpu backend: compiler '%s' not usable (%s %d)", cc,
                 rc < 0 ? "could not start" : "exit status", rc);
        return -1;
    }
    out[strcspn(out, "\n")] = '\0';
    snprintf(t->version, sizeof t->version, "%.127s", out);
    t->machine_key = machine_key();
    return 0;
}

/* The CPU objects go into $GEMMTUNE_CACHE_DIR itself (the cuda images into
 * its cuda/ subdirectory). */
static int cache_dir(char *buf, size_t len, char *err, size_t errlen)
{
    if (gt_cache_dir("cpu", NULL, buf, len) == 0)
        return 0;
    if (errno == ENAMETOOLONG)
        snprintf(err, errlen, "cpu backend: cache directory path too long");
    else
        snprintf(err, errlen, "cpu backend: cannot create cache directory %s: %s", buf,
                 strerror(errno));
    return -1;
}

/* The line of the compiler output that says what went wrong. */
static void first_error(const char *out, char *line, size_t len)
{
    const char *p = out, *pick = NULL;
    while (p && *p) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!pick && l > 0)
            pick = p; /* fallback: the first non-empty line */
        const char *hit = strstr(p, "error");
        if (hit && hit < p + l) {
            pick = p;
            break;
        }
        p = e ? e + 1 : NULL;
    }
    if (!pick) {
        snprintf(line, len, "(no compiler output)");
        return;
    }
    size_t l = strcspn(pick, "\n");
    snprintf(line, len, "%.*s", (int)(l < 300 ? l : 300), pick);
}

static void *load(const char *so, char *err, size_t errlen)
{
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        snprintf(err, errlen, "cpu backend: dlopen %.200s: %.200s", so, e ? e : "unknown error");
    }
    return dl;
}

int gt_cpu_cache_load(const gt_cpu_tool *t, const char *src, size_t len, void **dl, char *err,
                      size_t errlen)
{
    char dir[PATH_MAX - 128], so[PATH_MAX], tmp_c[PATH_MAX], tmp_so[PATH_MAX], final_c[PATH_MAX];
    *dl = NULL;
    if (cache_dir(dir, sizeof dir, err, errlen) != 0)
        return -1;
    uint64_t h = gt_fnv1a64(src, len, GT_FNV_SEED);
    for (int i = 0; k_flags[i]; i++)
        h = gt_fnv1a64(k_flags[i], strlen(k_flags[i]) + 1, h);
    for (int i = 0; i < t->cc_argc; i++)
        h = gt_fnv1a64(t->cc_argv[i], strlen(t->cc_argv[i]) + 1, h);
    h = gt_fnv1a64(t->version, strlen(t->version) + 1, h);
    h = gt_fnv1a64(&t->machine_key, sizeof t->machine_key, h);
    snprintf(so, sizeof so, "%s/%016llx.so", dir, (unsigned long long)h);
    snprintf(final_c, sizeof final_c, "%s/%016llx.c", dir, (unsigned long long)h);

    if (access(so, R_OK) == 0) {
        char lerr[512];
        if ((*dl = load(so, lerr, sizeof lerr)) != NULL) {
            atomic_fetch_add(&g_hits, 1);
            return 0;
        }
        /* An unloadable cached object (truncated by a crash outside our
         * rename protocol, foreign file): rebuild it below. */
    }
    atomic_fetch_add(&g_misses, 1);
    long seq = atomic_fetch_add(&g_seq, 1);
    snprintf(tmp_c, sizeof tmp_c, "%s/%016llx.tmp.%ld.%ld.c", dir, (unsigned long long)h,
             (long)getpid(), seq);
    snprintf(tmp_so, sizeof tmp_so, "%s/%016llx.tmp.%ld.%ld.so", dir, (unsigned long long)h,
             (long)getpid(), seq);
    if (gt_write_file(tmp_c, src, len) != 0) {
        snprintf(err, errlen, "cpu backend: cannot write %s: %s", tmp_c, strerror(errno));
        return -1;
    }
    char *argv[32];
    int n = 0;
    for (int i = 0; i < t->cc_argc; i++)
        argv[n++] = t->cc_argv[i];
    for (int i = 0; k_flags[i]; i++)
        argv[n++] = (char *)k_flags[i];
    argv[n++] = "-o";
    argv[n++] = tmp_so;
    argv[n++] = tmp_c;
    argv[n] = NULL;
    char *out = malloc(16384);
    if (!out) {
        snprintf(err, errlen, "cpu backend: out of memory");
        goto fail;
    }
    int rc = gt_run_argv(argv, out, 16384, COMPILE_TIMEOUT_MS);
    if (rc != 0) {
        char line[320];
        first_error(out, line, sizeof line);
        snprintf(err, errlen, "cpu backend: compile failed (%s %d): %s",
                 rc < 0 ? "could not start" : "exit status", rc, line);
        goto fail;
    }
    free(out);
    out = NULL;
    if (rename(tmp_so, so) != 0) {
        snprintf(err, errlen, "cpu backend: rename %s: %s", so, strerror(errno));
        goto fail;
    }
    /* Keep the source next to its object for inspection; losing it is harmless. */
    if (rename(tmp_c, final_c) != 0)
        unlink(tmp_c);
    if ((*dl = load(so, err, errlen)) == NULL)
        return -1;
    return 0;
fail:
    free(out);
    unlink(tmp_c);
    unlink(tmp_so);
    return -1;
}
