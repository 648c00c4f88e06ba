/* A training loop for the output checks (check_outputs.py), public API
 * only: --steps N of --zones Z zones, each step busy for --step_us us;
 * prints "step K" once step K has ended; with --hold, prints "done" after
 * the last step and waits to be killed. Other flags: --profiling.*. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trainprof.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    tp_config *cfg = tp_config_new();
    tp_error err;
    if (!cfg || tp_config_parse_args(cfg, &argc, argv, &err) != 0) {
        fprintf(stderr, "out_steps: %s\n", cfg ? err.message : "out of memory");
        return 2;
    }
    long steps = 10, zones = 10, step_us = 0;
    int hold = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--hold") == 0)
            hold = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--steps") == 0)
            steps = atol(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--zones") == 0)
            zones = atol(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--step_us") == 0)
            step_us = atol(argv[++i]);
        else {
            fprintf(stderr, "out_steps: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!s) {
        fprintf(stderr, "out_steps: %s\n", err.message);
        return 1;
    }
    volatile double sink = 0;
    for (long k = 0; k < steps; k++) {
        double t0 = now_us();
        tp_step_begin(s);
        for (long z = 0; z < zones; z += 2) {
            {
                TP_ZONE(s, "forward");
                sink += (double)z;
            }
            TP_ZONE(s, "backward");
            sink += (double)z;
        }
        while (now_us() - t0 < (double)step_us)
            sink += 1;
        tp_step_end(s, 8);
        printf("step %ld\n", k);
        fflush(stdout);
    }
    if (hold) {
        printf("done\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    (void)sink;
    return tp_session_close(s, NULL) == 0 ? 0 : 1;
}
