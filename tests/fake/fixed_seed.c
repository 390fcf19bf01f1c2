/* A server whose random seed is fixed: opened through this library, /dev/urandom reads as the
 * same 64 bytes every time. Redis seeds its hash tables from it at start (the command table
 * among them), so that where a command's name lands, and the compares its lookup makes, change
 * from one start to the next; with this seed they repeat, and so do callgrind's instruction
 * counts of a whole server (benches/e2e/callgrind.rs). Preloaded with LD_PRELOAD; nothing else
 * changes. FIXED_SEED, if set, is written over the seed's first bytes: another fixed layout
 * (benches/e2e/neighbours.rs averages over a few, as the server's command table is one draw). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char seed[4096] = "redis-bf: a fixed seed for repeatable instruction counts";

FILE *fopen(const char *path, const char *mode) {
    static FILE *(*real)(const char *, const char *) = NULL;
    if (path != NULL && strcmp(path, "/dev/urandom") == 0) {
        const char *chosen = getenv("FIXED_SEED");
        if (chosen != NULL) {
            size_t length = strlen(chosen);
            memcpy(seed, chosen, length < sizeof(seed) ? length : sizeof(seed));
        }
        return fmemopen(seed, sizeof(seed), "r");
    }
    if (real == NULL) {
        real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
    }
    return real(path, mode);
}

FILE *fopen64(const char *path, const char *mode) {
    return fopen(path, mode);
}
