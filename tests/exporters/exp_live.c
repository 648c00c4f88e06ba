/*
 * exp_live - a small training-like loop through the real library for the
 * round trip (check_roundtrip.py): nested zones, zones with args
 * (record_shapes), counters. Profiling flags come from the command line;
 * "--steps N" sets the number of steps (default 30).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainprof.h"

static volatile double sink;

static void work(int n)
{
    double x = 1;
    for (int i = 0; i < n; i++)
        x = x * 1.0000001 + 0.5;
    sink = x;
}

int main(int argc, char **argv)
{
    tp_error e = { 0 };
    tp_config *c = tp_config_new();
    if (!c || tp_config_parse_args(c, &argc, argv, &e) != 0) {
        fprintf(stderr, "exp_live: %s\n", e.message);
        return 2;
    }
    int steps = 30;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--steps") == 0)
            steps = atoi(argv[i + 1]);
    tp_session *s = tp_session_open(c, &e);
    if (!s) {
        fprintf(stderr, "exp_live: %s\n", e.message);
        tp_config_free(c);
        return 2;
    }
    for (int step = 0; step < steps; step++) {
        tp_step_begin(s);
        {
            TP_ZONE(s, "forward");
            char shape[64];
            snprintf(shape, sizeof shape, "[[%d, 128], [128, 32]]", 16 + step % 3);
            tp_zone_begin_args(s, "matmul", shape);
            work(2000);
            tp_zone_end(s);
            tp_zone_begin_args(s, "lookup", "table \"emb\" \\ 7");
            work(500);
            tp_zone_end(s);
        }
        {
            TP_ZONE(s, "backward");
            work(3000);
            TP_ZONE(s, "clip \"grad\" \\ norm"); /* escaped once, then from the sink's cache */
            work(100);
        }
        tp_counter(s, "loss", 1.0 / (step + 1));
        tp_step_end(s, 8);
    }
    int rc = tp_session_close(s, &e) != 0;
    tp_config_free(c);
    return rc;
}
