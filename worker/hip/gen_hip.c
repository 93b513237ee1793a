/* gen_hip.c: hipRTC compiles of the generated kernel templates ("gemv",
 * "mma") for AMD targets (gen_hip.h). */
#include "gen_hip.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gt_util.h"

typedef void *hrtc_prog;
typedef struct hrtc {
    void *dl;
    char lib[64];
    int (*create)(hrtc_prog *, const char *, const char *, int, const char **, const char **);
    int (*compile)(hrtc_prog, int, const char **);
    int (*logsize)(hrtc_prog, size_t *);
    int (*getlog)(hrtc_prog, char *);
    int (*codesize)(hrtc_prog, size_t *);
    int (*getcode)(hrtc_prog, char *);
    int (*destroy)(hrtc_prog *);
    const char *(*errstr)(int);
    int (*version)(int *, int *);
} hrtc;

static int rtc_load(hrtc *r, char *why, size_t len)
{
    static const char *const libs[] = {"libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5",
                                       "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        void *dl = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!dl)
            continue;
        /* dlsym returns void*; a function pointer needs the memcpy dance in ISO C */
#define SYM(field, name)                                                                          \
    do {                                                                                           \
        void *s_ = dlsym(dl, name);                                                                \
        memcpy(&r->field, &s_, sizeof s_);                                                         \
    } while (0)
        SYM(create, "hiprtcCreateProgram");
        SYM(compile, "hiprtcCompileProgram");
        SYM(logsize, "hiprtcGetProgramLogSize");
        SYM(getlog, "hiprtcGetProgramLog");
        SYM(codesize, "hiprtcGetCodeSize");
        SYM(getcode, "hiprtcGetCode");
        SYM(destroy, "hiprtcDestroyProgram");
        SYM(errstr, "hiprtcGetErrorString");
        SYM(version, "hiprtcVersion");
#undef SYM
        if (r->create && r->compile && r->logsize && r->getlog && r->codesize && r->getcode &&
            r->destroy && r->errstr) {
            r->dl = dl;
            snprintf(r->lib, sizeof r->lib, "%s", libs[i]);
            return 0;
        }
        dlclose(dl);
        memset(r, 0, sizeof *r);
    }
    snprintf(why, len, "hipRTC not found (no libhiprtc.so / libamdhip64.so with hiprtc* symbols; "
                       "Debian: apt-get install libamdhip64-dev)");
    return -1;
}

int gt_hip_rtc_available(char *why, size_t len)
{
    hrtc r;
    if (rtc_load(&r, why, len) != 0)
        return 0;
    int maj = 0, min = 0;
    if (r.version)
        (void)r.version(&maj, &min);
    snprintf(why, len, "hipRTC from %s (version %d.%d)", r.lib, maj, min);
    dlclose(r.dl);
    return 1;
}

/* The unsigned value msgpack encodes at p (fixint, uint8/16/32), or -1. */
static long long mp_uint(const unsigned char *p, const unsigned char *end)
{
    if (p >= end)
        return -1;
    if (p[0] < 0x80)
        return p[0];
    int n = p[0] == 0xcc ? 1 : p[0] == 0xcd ? 2 : p[0] == 0xce ? 4 : 0;
    if (!n || p + 1 + n > end)
        return -1;
    long long v = 0;
    for (int i = 1; i <= n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The largest value (sum: the total) of the msgpack map key `key` over the
 * kernels of the code object's metadata note; 0 when absent. */
static long long co_meta(const unsigned char *co, size_t len, const char *key, int sum)
{
    size_t kl = strlen(key);
    long long best = 0;
    for (size_t i = 1; i + kl < len; i++) {
        /* a fixstr key: its length byte, then the text */
        if (co[i - 1] != (0xa0 | kl) || memcmp(co + i, key, kl) != 0)
            continue;
        long long v = mp_uint(co + i + kl, co + len);
        if (v > 0)
            best = sum ? best + v : v > best ? v : best;
    }
    return best;
}

/* Compiles src with the -D definitions and extra options for arch; 0 with
 * code filled, or -1 with the compiler's message. */
static int compile_src(hrtc *r, const char *src, const char *arch, const char *const *defs, int nd,
                       const char *extra, gt_hip_code *code, char *err, size_t errlen)
{
    const char *opts[GT_GEN_MAX_DEFS + 3];
    char a[48], *log = NULL, *co = NULL;
    int n = 0, rc = -1;
    hrtc_prog prog = NULL;
    size_t ls = 0, cs = 0;
    memset(code, 0, sizeof *code);
    snprintf(a, sizeof a, "--offload-arch=%s", arch);
    opts[n++] = a;
    opts[n++] = "-O3";
    if (extra)
        opts[n++] = extra;
    for (int i = 0; i < nd && i < GT_GEN_MAX_DEFS; i++)
        opts[n++] = defs[i];
    int hr = r->create(&prog, src, "gt_gen_hip.cu", 0, NULL, NULL);
    if (hr != 0) {
        snprintf(err, errlen, "hiprtcCreateProgram: %s", r->errstr(hr));
        return -1;
    }
    hr = r->compile(prog, n, opts);
    if (hr != 0) {
        if (r->logsize(prog, &ls) == 0 && ls > 1 && (log = malloc(ls + 1)) && r->getlog(prog, log) == 0) {
            log[ls] = 0;
            const char *e = strstr(log, "error");
            snprintf(err, errlen, "hipRTC (%s): %.240s", arch, e ? e : log);
        } else {
            snprintf(err, errlen, "hipRTC (%s): %s", arch, r->errstr(hr));
        }
        goto out;
    }
    if (r->codesize(prog, &cs) != 0 || cs == 0) {
        snprintf(err, errlen, "hipRTC (%s): empty code object", arch);
        goto out;
    }
    if (!(co = malloc(cs)) || r->getcode(prog, co) != 0) {
        snprintf(err, errlen, "hipRTC (%s): cannot read the code object (%zu bytes)", arch, cs);
        goto out;
    }
    code->bytes = cs;
    code->vgprs = (int)co_meta((const unsigned char *)co, cs, ".vgpr_count", 0);
    code->spills = (int)(co_meta((const unsigned char *)co, cs, ".vgpr_spill_count", 1) +
                         co_meta((const unsigned char *)co, cs, ".sgpr_spill_count", 1));
    rc = 0;
out:
    free(co);
    free(log);
    (void)r->destroy(&prog);
    return rc;
}

/* Loads hipRTC and compiles one instantiation; 0 or -1 with the message. */
static int compile_one(const char *src, const char *arch, char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN], int nd,
                       const char *extra, gt_hip_code *code, char *err, size_t errlen)
{
    const char *dp[GT_GEN_MAX_DEFS];
    hrtc r;
    if (rtc_load(&r, err, errlen) != 0)
        return -1;
    for (int i = 0; i < nd; i++)
        dp[i] = defs[i];
    int rc = compile_src(&r, src, arch, dp, nd, extra, code, err, errlen);
    dlclose(r.dl);
    return rc;
}

int gt_hip_gen_compile(const char *arch, const gt_problem *p, const gt_gen_cfg *c,
                       size_t *code_bytes, char *err, size_t errlen)
{
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    gt_hip_code code;
    int nd = gt_gen_defines(p, c, 1, defs);
    if (nd < 0) {
        snprintf(err, errlen, "gemv: no encoding of this problem's types");
        return -1;
    }
    if (compile_one(gt_gen_gemv_src, arch, defs, nd, NULL, &code, err, errlen) != 0)
        return -1;
    *code_bytes = code.bytes;
    return 0;
}

int gt_hip_mma_compile(const char *arch, const gt_problem *p, const gt_mma_cfg *c, gt_hip_code *code,
                       char *err, size_t errlen)
{
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    int nd = gt_mma_defines_for(p, c, 1, defs);
    if (nd < 0) {
        snprintf(err, errlen, "mma: no encoding of this problem's types");
        return -1;
    }
    /* "atomic" split-K: global_atomic_add_f32 rather than a CAS loop; exact
     * on the workspace, which is device memory (coarse-grained) */
    return compile_one(gt_gen_mma_hip_src, arch, defs, nd, "-munsafe-fp-atomics", code, err, errlen);
}

static const char k_probe_src[] =
    "extern \"C\" __global__ void gt_probe(float *p) { p[threadIdx.x] += 1.0f; }\n";

int gt_hip_arch_known(const char *arch, char *why, size_t len)
{
    int pfd[2];
    if (pipe(pfd) != 0) {
        snprintf(why, len, "pipe: %s", strerror(errno));
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        snprintf(why, len, "fork: %s", strerror(errno));
        return 0;
    }
    if (pid == 0) {
        char err[300] = "";
        hrtc r;
        gt_hip_code code;
        close(pfd[0]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) /* an unknown arch aborts with allocator noise */
            (void)dup2(devnull, 2);
        int rc = rtc_load(&r, err, sizeof err) == 0 &&
                 compile_src(&r, k_probe_src, arch, NULL, 0, NULL, &code, err, sizeof err) == 0;
        if (write(pfd[1], err, strlen(err)) < 0)
            _exit(3);
        _exit(rc ? 0 : 1);
    }
    close(pfd[1]);
    char msg[300] = "";
    ssize_t got = read(pfd[0], msg, sizeof msg - 1);
    msg[got > 0 ? got : 0] = 0;
    close(pfd[0]);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) {
        snprintf(why, len, "waitpid: %s", strerror(errno));
        return 0;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        snprintf(why, len, "%s compiles", arch);
        return 1;
    }
    if (WIFSIGNALED(st))
        snprintf(why, len, "hipRTC aborted on %s (signal %d): this compiler does not know it", arch,
                 WTERMSIG(st));
    else
        snprintf(why, len, "%s: %s", arch, msg[0] ? msg : "compile failed");
    return 0;
}

/* One family's configs, as compile_all sees them: an array of `size`-byte
 * configs, how to compile one and how to name it. */
typedef struct family {
    const void *cfgs;
    size_t size;
    int (*compile)(const char *arch, const gt_problem *p, const void *cfg, gt_hip_code *code, char *err,
                   size_t errlen);
    int (*text)(const void *cfg, char *buf, size_t len);
} family;

static int gemv_one(const char *arch, const gt_problem *p, const void *cfg, gt_hip_code *code, char *err,
                    size_t errlen)
{
    memset(code, 0, sizeof *code);
    return gt_hip_gen_compile(arch, p, cfg, &code->bytes, err, errlen);
}

static int gemv_text(const void *cfg, char *buf, size_t len) { return gt_gen_cfg_text(cfg, buf, len); }

static int mma_one(const char *arch, const gt_problem *p, const void *cfg, gt_hip_code *code, char *err,
                   size_t errlen)
{
    return gt_hip_mma_compile(arch, p, cfg, code, err, errlen);
}

static int mma_text(const void *cfg, char *buf, size_t len) { return gt_mma_cfg_text(cfg, buf, len); }

/* Child j of `jobs`: configs j, j + jobs, ...; one line per config on fd:
 * "index ok vgprs spills" or "index error-text". Never returns. */
static void child(const char *arch, const gt_problem *p, const family *fam, int n, int j, int jobs, int fd)
{
    FILE *f = fdopen(fd, "w");
    if (!f)
        _exit(2);
    for (int i = j; i < n; i += jobs) {
        char err[300] = "";
        gt_hip_code code;
        if (fam->compile(arch, p, (const char *)fam->cfgs + (size_t)i * fam->size, &code, err, sizeof err) == 0) {
            fprintf(f, "%d ok %d %d\n", i, code.vgprs, code.spills);
        } else {
            for (char *q = err; *q; q++)
                if (*q == '\n')
                    *q = ' ';
            fprintf(f, "%d %s\n", i, err);
        }
        fflush(f);
    }
    fclose(f);
    _exit(0);
}

static int compile_all(const char *arch, const gt_problem *p, const family *fam, int n, int jobs,
                       gt_hip_batch *out)
{
    pid_t pids[64];
    int fds[64], started = 0, rc = -1;
    char *seen = NULL;
    memset(out, 0, sizeof *out);
    double t0 = gt_mono_ms();
    if (n < 0)
        n = 0;
    if (!(seen = calloc((size_t)n + 1, 1)))
        return -1;
    jobs = jobs < 1 ? 1 : jobs > 64 ? 64 : jobs;
    if (jobs > n)
        jobs = n > 0 ? n : 1;
    for (int j = 0; j < jobs; j++) {
        int pfd[2];
        if (pipe(pfd) != 0)
            break;
        pid_t pid = fork();
        if (pid < 0) {
            close(pfd[0]);
            close(pfd[1]);
            break;
        }
        if (pid == 0) {
            close(pfd[0]);
            for (int q = 0; q < started; q++) /* the siblings' pipes are not ours */
                close(fds[q]);
            child(arch, p, fam, n, j, jobs, pfd[1]);
        }
        close(pfd[1]);
        pids[started] = pid;
        fds[started++] = pfd[0];
    }
    if (!started)
        goto out;
    for (int j = 0; j < started; j++) {
        FILE *f = fdopen(fds[j], "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
            int idx = atoi(line), vg = 0, sp = 0;
            const char *rest = strchr(line, ' ');
            if (idx < 0 || idx >= n || !rest)
                continue;
            seen[idx] = 1;
            if (sscanf(rest, " ok %d %d", &vg, &sp) == 2) {
                out->ok++;
                out->spilled += sp > 0;
                out->vgprs_max = vg > out->vgprs_max ? vg : out->vgprs_max;
                continue;
            }
            if (!out->failed++) {
                char text[200];
                fam->text((const char *)fam->cfgs + (size_t)idx * fam->size, text, sizeof text);
                snprintf(out->first_err, sizeof out->first_err, "%.120s: %.180s", text, rest + 1);
            }
        }
        if (f)
            fclose(f);
        else
            close(fds[j]);
        int st = 0;
        if (waitpid(pids[j], &st, 0) != pids[j] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            if (!out->first_err[0])
                snprintf(out->first_err, sizeof out->first_err, "compile child %s %d",
                         WIFSIGNALED(st) ? "killed by signal" : "exited with",
                         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        }
    }
    for (int i = 0; i < n; i++)
        out->failed += !seen[i]; /* its child died first */
    rc = 0;
out:
    free(seen);
    out->seconds = (gt_mono_ms() - t0) / 1000;
    return rc;
}

int gt_hip_gen_compile_all(const char *arch, const gt_problem *p, const gt_gen_cfg *cs, int n,
                           int jobs, gt_hip_batch *out)
{
    const family fam = {cs, sizeof *cs, gemv_one, gemv_text};
    return compile_all(arch, p, &fam, n, jobs, out);
}

int gt_hip_mma_compile_all(const char *arch, const gt_problem *p, const gt_mma_cfg *cs, int n,
                           int jobs, gt_hip_batch *out)
{
    const family fam = {cs, sizeof *cs, mma_one, mma_text};
    return compile_all(arch, p, &fam, n, jobs, out);
}
