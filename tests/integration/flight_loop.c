/* A training loop for the flight-recorder checks (check_captures.py),
 * public API only. Prints "run_dir PATH" once the session is open and
 * "step K" after each step. --steps N (0: until SIGTERM, then closes and
 * exits 0), --zones Z per step (forward/backward pairs), --step_ms MS of
 * busy time per step, --slow K (step K sleeps 30 steps' time more, inside zone
 * "slow_part"), --stall K --stall_s S (step K sleeps S seconds inside zone
 * "stuck_here"). Other flags: --profiling.*. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trainprof.h"

static volatile sig_atomic_t g_stop;

static void on_term(int sig)
{
    (void)sig;
    g_stop = 1;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static volatile double g_sink;

static void busy_ms(double ms)
{
    double t0 = now_ms();
    while (now_ms() - t0 < ms)
        g_sink += 1;
}

int main(int argc, char **argv)
{
    tp_config *cfg = tp_config_new();
    tp_error err;
    if (!cfg || tp_config_parse_args(cfg, &argc, argv, &err) != 0) {
        fprintf(stderr, "flight_loop: %s\n", cfg ? err.message : "out of memory");
        return 2;
    }
    long steps = 20, zones = 10, slow = -1, stall = -1;
    double step_ms = 2, stall_s = 0;
    for (int i = 1; i < argc; i += 2) { /* --flag value pairs */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v && strcmp(argv[i], "--steps") == 0)
            steps = atol(v);
        else if (v && strcmp(argv[i], "--zones") == 0)
            zones = atol(v);
        else if (v && strcmp(argv[i], "--step_ms") == 0)
            step_ms = atof(v);
        else if (v && strcmp(argv[i], "--slow") == 0)
            slow = atol(v);
        else if (v && strcmp(argv[i], "--stall") == 0)
            stall = atol(v);
        else if (v && strcmp(argv[i], "--stall_s") == 0)
            stall_s = atof(v);
        else {
            fprintf(stderr, "flight_loop: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    signal(SIGTERM, on_term);
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!s) {
        fprintf(stderr, "flight_loop: %s\n", err.message);
        return 1;
    }
    printf("run_dir %s\n", tp_session_dir(s));
    fflush(stdout);
    for (long k = 0; (steps == 0 || k < steps) && !g_stop; k++) {
        tp_step_begin(s);
        for (long z = 0; z < zones; z += 2) {
            {
                TP_ZONE(s, "forward");
                busy_ms(step_ms / (double)zones);
            }
            TP_ZONE(s, "backward");
            busy_ms(step_ms / (double)zones);
        }
        if (k == slow) { /* a sleep: 30 steps' time whatever the machine's load */
            TP_ZONE(s, "slow_part");
            double ms = step_ms * 30;
            struct timespec ts = {(time_t)(ms / 1000), (long)(ms - (double)(time_t)(ms / 1000) * 1000) * 1000000L};
            while (nanosleep(&ts, &ts) != 0 && !g_stop)
                ;
        }
        if (k == stall) {
            TP_ZONE(s, "stuck_here");
            struct timespec ts = {(time_t)stall_s, (long)((stall_s - (double)(time_t)stall_s) * 1e9)};
            while (nanosleep(&ts, &ts) != 0 && !g_stop)
                ;
        }
        tp_counter(s, "loss", 1.0 / (double)(k + 1));
        tp_step_end(s, 8);
        printf("step %ld\n", k);
        fflush(stdout);
    }
    return tp_session_close(s, NULL) == 0 ? 0 : 1;
}
