/* preload_app.c: gt-preload-app LIB global|local
 * Loads libgt_ltuser.so (a cuBLASLt user linked against the fake
 * libcublasLt) like PyTorch loads its CUDA libraries: with RTLD_GLOBAL (its
 * libcublasLt lands in the global scope, where the shim's dlsym(RTLD_NEXT)
 * finds it) or RTLD_LOCAL (it does not: the shim must find it among the
 * loaded objects). Either way the library's cuBLASLt calls bind to the
 * LD_PRELOADed shim first. Runs its GEMMs; exit status 0 on success. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "global") && strcmp(argv[2], "local"))) {
        fprintf(stderr, "usage: gt-preload-app LIB global|local\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | (strcmp(argv[2], "global") ? RTLD_LOCAL : RTLD_GLOBAL));
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    int (*run)(void);
    *(void **)&run = dlsym(h, "lt_user_run");
    if (!run) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    return run();
}
