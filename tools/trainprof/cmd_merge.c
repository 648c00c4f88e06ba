/* cmd_merge.c - `trainprof merge FILES... -o OUT`: ranks on one timeline. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "cli_common.h"
#include "commands.h"
#include "analyze/rewrite/rewrite.h"

static const char USAGE[] =
    "usage: trainprof merge FILE...|JOB_DIR -o OUT\n"
    "Puts several traces (one per rank) on one timeline: each becomes one process\n"
    "named \"rank R\" (rank from distributedInfo or trainprof metadata, else the\n"
    "file's position), its threads and GPU streams become named threads, and\n"
    "timestamps are aligned on the wall-clock base each trace records\n"
    "(baseTimeNanoseconds or trainprof.base_time_ns; on rank 0's clock once the\n"
    "job ran tp_session_sync). A directory stands for every trace of every rank in it.\n\n"
    "  -o, --output OUT  output path (.gz compresses, '-' = stdout)\n"
    "  --json            print a summary as JSON\n"
    "  -j N              threads that parse each input (default: the cores online)\n"
    "Exit: 0 ok, 2 bad input.\n";

int cmd_merge(int argc, char **argv)
{
    cli_init();
    const char *cmd = argv[0], *out = NULL;
    const char *files[1024];
    char **owned[1024]; /* paths found in job directories */
    size_t n = 0, n_owned = 0, n_found[1024];
    bool json = false;
    for (int i = 1; i < argc; i++) {
        int k = cli_common_arg(argc, argv, &i, USAGE, &json, &out);
        if (k == CLI_ARG_USED) continue;
        if (k != CLI_ARG_NONE) return cli_arg_exit(k);
        if (argv[i][0] == '-' && argv[i][1]) return cli_fail(cmd, "unknown option %s", argv[i]);
        else if (n == 1024) return cli_fail(cmd, "too many files (1024 at most)");
        else if (tpa_is_dir(argv[i]) && n_owned < 1024) { /* a job directory: all its ranks */
            if (cli_job_trace_files(argv[i], &owned[n_owned], &n_found[n_owned]) != 0) return CLI_BAD_INPUT;
            for (size_t k = 0; k < n_found[n_owned] && n < 1024; k++) files[n++] = owned[n_owned][k];
            n_owned++;
        } else files[n++] = argv[i];
    }
    if (!n) return cli_fail(cmd, "no trace files given");
    if (!out) return cli_fail(cmd, "no output given (-o OUT)");
    for (size_t i = 0; i < n; i++)  /* every file is read twice */
        if (cli_stdin_to_file(&files[i]) != 0) return CLI_BAD_INPUT;
    tpa_write_stats st;
    tpa_error err;
    int merged = tpa_merge(files, n, out, &st, &err);
    for (size_t i = 0; i < n_owned; i++) {
        for (size_t k = 0; k < n_found[i]; k++) free(owned[i][k]);
        free(owned[i]);
    }
    if (merged != 0) return cli_error(&err);
    FILE *f = strcmp(out, "-") == 0 ? stderr : stdout;
    if (json) {
        fprintf(f, "{\"files\": %zu, \"output\": ", n);
        tpa_json_str(f, out, strlen(out));
        fprintf(f, ", \"events_in\": %" PRIu64 ", \"events_out\": %" PRIu64 "}\n", st.in_events, st.out_events);
    } else fprintf(f, "merged %zu traces (%" PRIu64 " events) -> %s\n", n, st.in_events, out);
    return CLI_OK;
}
