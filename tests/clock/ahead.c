/* A test double for a server whose clock runs ahead: preloaded (LD_PRELOAD) into redis-server,
 * it moves the wall clock (clock_gettime's CLOCK_REALTIME family, gettimeofday, time) forward by
 * BF_TEST_CLOCK_AHEAD_MS milliseconds; monotonic clocks are left alone. It asks the kernel
 * directly (no dlsym, no allocation), so it is safe to call while the allocator initialises,
 * where libfaketime recurses and stops redis-server from starting. tests/common/mod.rs builds it
 * into target/ and tests/window_clock.rs uses it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long ahead_ms(void) {
    static long long cached = -1;
    if (cached < 0) {
        const char *text = getenv("BF_TEST_CLOCK_AHEAD_MS");
        cached = text ? atoll(text) : 0;
    }
    return cached;
}

static int is_wall(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    int rc = (int)syscall(SYS_clock_gettime, clock, ts);
    if (rc == 0 && is_wall(clock)) {
        long long ns = (long long)ts->tv_nsec + ahead_ms() % 1000 * 1000000LL;
        ts->tv_sec += ahead_ms() / 1000 + ns / 1000000000LL;
        ts->tv_nsec = ns % 1000000000LL;
    }
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    if (tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
