/* gen_hip.c: hipRTC compiles of the "gemv" template for AMD targets
 * (gen_hip.h). */
#include "gen_hip.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
        SYM(destroy, "hiprtcDestroyProgram");
        SYM(errstr, "hiprtcGetErrorString");
        SYM(version, "hiprtcVersion");
#undef SYM
        if (r->create && r->compile && r->logsize && r->getlog && r->codesize && r->destroy &&
            r->errstr) {
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

static int compile_src(hrtc *r, const char *src, const char *arch, const char *const *defs, int nd,
                       size_t *code, char *err, size_t errlen)
{
    const char *opts[GT_GEN_MAX_DEFS + 2];
    char a[48];
    int n = 0;
    snprintf(a, sizeof a, "--offload-arch=%s", arch);
    opts[n++] = a;
    opts[n++] = "-O3";
    for (int i = 0; i < nd; i++)
        opts[n++] = defs[i];
    hrtc_prog prog = NULL;
    int rc = r->create(&prog, src, "gt_gen_hip.cu", 0, NULL, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "hiprtcCreateProgram: %s", r->errstr(rc));
        return -1;
    }
    rc = r->compile(prog, n, opts);
    size_t ls = 0, cs = 0;
    if (rc != 0) {
        char *log = NULL;
        if (r->logsize(prog, &ls) == 0 && ls > 1 && (log = malloc(ls + 1)) && r->getlog(prog, log) == 0) {
            log[ls] = 0;
            const char *e = strstr(log, "error");
            snprintf(err, errlen, "hipRTC (%s): %.240s", arch, e ? e : log);
        } else {
            snprintf(err, errlen, "hipRTC (%s): %s", arch, r->errstr(rc));
        }
        free(log);
        (void)r->destroy(&prog);
        return -1;
    }
    if (r->codesize(prog, &cs) != 0 || cs == 0) {
        snprintf(err, errlen, "hipRTC (%s): empty code object", arch);
        (void)r->destroy(&prog);
        return -1;
    }
    (void)r->destroy(&prog);
    *code = cs;
    return 0;
}

int gt_hip_gen_compile(const char *arch, const gt_problem *p, const gt_gen_cfg *c,
                       size_t *code_bytes, char *err, size_t errlen)
{
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    const char *dp[GT_GEN_MAX_DEFS];
    hrtc r;
    int nd = gt_gen_defines(p, c, 1, defs);
    if (nd < 0) {
        snprintf(err, errlen, "gemv: no encoding of this problem's types");
        return -1;
    }
    if (rtc_load(&r, err, errlen) != 0)
        return -1;
    for (int i = 0; i < nd; i++)
        dp[i] = defs[i];
    int rc = compile_src(&r, gt_gen_gemv_src, arch, dp, nd, code_bytes, err, errlen);
    dlclose(r.dl);
    return rc;
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
        size_t cs = 0;
        close(pfd[0]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) /* an unknown arch aborts with allocator noise */
            (void)dup2(devnull, 2);
        int rc = rtc_load(&r, err, sizeof err) == 0 &&
                 compile_src(&r, k_probe_src, arch, NULL, 0, &cs, err, sizeof err) == 0;
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
    waitpid(pid, &st, 0);
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

int gt_hip_gen_compile_all(const char *arch, const gt_problem *p, const gt_gen_cfg *cs, int n,
                           int jobs, gt_hip_batch *out)
{
    memset(out, 0, sizeof *out);
    double t0 = gt_mono_ms();
    if (jobs < 1)
        jobs = 1;
    if (jobs > n)
        jobs = n > 0 ? n : 1;
    pid_t pids[64];
    int fds[64], started = 0;
    if (jobs > 64)
        jobs = 64;
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
            /* child j: configs j, j+jobs, ...; one line per config:
             * "index ok" or "index error-text" */
            close(pfd[0]);
            FILE *f = fdopen(pfd[1], "w");
            if (!f)
                _exit(2);
            for (int i = j; i < n; i += jobs) {
                char err[300] = "";
                size_t code = 0;
                if (gt_hip_gen_compile(arch, p, &cs[i], &code, err, sizeof err) == 0)
                    fprintf(f, "%d ok\n", i);
                else {
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
        close(pfd[1]);
        pids[started] = pid;
        fds[started++] = pfd[0];
    }
    if (!started)
        return -1;
    char *seen = calloc((size_t)(n > 0 ? n : 1), 1);
    for (int j = 0; j < started; j++) {
        FILE *f = fdopen(fds[j], "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
            int idx = atoi(line);
            const char *rest = strchr(line, ' ');
            if (idx < 0 || idx >= n || !rest)
                continue;
            if (seen)
                seen[idx] = 1;
            if (!strcmp(rest, " ok\n")) {
                out->ok++;
                continue;
            }
            if (!out->failed++) {
                char text[200];
                gt_gen_cfg_text(&cs[idx], text, sizeof text);
                snprintf(out->first_err, sizeof out->first_err, "%.120s: %.180s", text, rest + 1);
            }
        }
        if (f)
            fclose(f);
        else
            close(fds[j]);
        int st = 0;
        waitpid(pids[j], &st, 0);
        if (!WIFEXITED(st) && !out->first_err[0])
            snprintf(out->first_err, sizeof out->first_err, "compile child killed by signal %d",
                     WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    for (int i = 0; i < n; i++)
        if (seen && !seen[i])
            out->failed++; /* its child died first */
    free(seen);
    out->seconds = (gt_mono_ms() - t0) / 1000;
    return 0;
}
