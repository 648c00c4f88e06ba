/* read_trace.c - the trace reader alone (no analysis): reads every event of
 * FILE and prints how many, so bench_report.py can time the reader's CPU
 * per byte apart from what `report` does with the events. JOBS (default 1)
 * parses with that many threads, as `-j` does. */
#include "analyze/trace/trace.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: tp_read_trace FILE [JOBS]\n");
        return 2;
    }
    tpa_set_jobs(argc == 3 ? atoi(argv[2]) : 1);
    tpa_error err = {0};
    tpa_reader *r = tpa_reader_open(argv[1], &err);
    if (!r) {
        tpa_error_print(stderr, &err);
        return 2;
    }
    int rc = tpa_reader_drain(r, &err);
    if (rc < 0)
        tpa_error_print(stderr, &err);
    else
        printf("%llu events, %llu bytes\n", (unsigned long long)tpa_reader_meta(r)->events,
               (unsigned long long)tpa_reader_meta(r)->bytes);
    tpa_reader_close(r);
    return rc < 0 ? 2 : 0;
}
