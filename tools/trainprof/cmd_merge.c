/* cmd_merge.c - `trainprof merge FILES... -o OUT`: ranks on one timeline. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "cli_common.h"
#include "commands.h"
#include "analyze/rewrite/rewrite.h"

#define MAX_FILES 1024

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
    "  -j N              threads that parse each input (default: the cores it may run on)\n"
    "OUT is written beside and renamed into place (the old OUT stays on any error),\n"
    "never over an input. Exit: 0 ok, 2 bad input or OUT cannot be written.\n";

static void free_owned(char **owned[], const size_t n_found[], size_t n_owned)
{
    for (size_t i = 0; i < n_owned; i++) {
        for (size_t k = 0; k < n_found[i]; k++) free(owned[i][k]);
        free(owned[i]);
    }
}

/* The command line: the input files (job directories expanded) and -o.
 * 0, or the exit status after reporting (-1 after --help). */
static int parse(int argc, char **argv, const char **files, size_t *n, char **owned[], size_t n_found[],
                 size_t *n_owned, bool *json, const char **out)
{
    const char *cmd = argv[0];
    for (int i = 1; i < argc; i++) {
        int k = cli_common_arg(argc, argv, &i, USAGE, json, out);
        if (k == CLI_ARG_USED) continue;
        if (k != CLI_ARG_NONE) return k == CLI_ARG_HELP ? -1 : CLI_BAD_INPUT;
        if (argv[i][0] == '-' && argv[i][1]) return cli_fail(cmd, "unknown option %s", argv[i]);
        if (*n == MAX_FILES) return cli_fail(cmd, "too many files (%d at most)", MAX_FILES);
        if (!tpa_is_dir(argv[i])) { files[(*n)++] = argv[i]; continue; }
        /* a job directory: all its ranks */
        char **found;
        size_t nf;
        if (cli_job_trace_files(argv[i], &found, &nf) != 0) return CLI_BAD_INPUT;
        owned[*n_owned] = found;
        n_found[(*n_owned)++] = nf;  /* freed by the caller, whatever happens next */
        if (nf > MAX_FILES - *n)
            return cli_fail(cmd, "too many files (%d at most; %s holds %zu)", MAX_FILES, argv[i], nf);
        for (size_t f = 0; f < nf; f++) files[(*n)++] = found[f];
    }
    if (!*n) return cli_fail(cmd, "no trace files given");
    if (!*out) return cli_fail(cmd, "no output given (-o OUT)");
    return 0;
}

int cmd_merge(int argc, char **argv)
{
    cli_init();
    const char *out = NULL;
    const char *files[MAX_FILES];
    char **owned[MAX_FILES]; /* paths found in job directories */
    size_t n = 0, n_owned = 0, n_found[MAX_FILES];
    bool json = false;
    int rc = parse(argc, argv, files, &n, owned, n_found, &n_owned, &json, &out);
    for (size_t i = 0; rc == 0 && i < n; i++)  /* every file is read twice */
        if (cli_stdin_to_file(&files[i]) != 0) rc = CLI_BAD_INPUT;
    tpa_write_stats st;
    tpa_error err;
    if (rc == 0 && tpa_merge(files, n, out, &st, &err) != 0) rc = cli_error(&err);
    free_owned(owned, n_found, n_owned);
    if (rc != 0) return rc < 0 ? CLI_OK : rc;
    FILE *f = strcmp(out, "-") == 0 ? stderr : stdout;
    if (json) {
        fprintf(f, "{\"files\": %zu, \"output\": ", n);
        tpa_json_str(f, out, strlen(out));
        fprintf(f, ", \"events_in\": %" PRIu64 ", \"events_out\": %" PRIu64 "}\n", st.in_events, st.out_events);
    } else fprintf(f, "merged %zu traces (%" PRIu64 " events) -> %s\n", n, st.in_events, out);
    return CLI_OK;
}
