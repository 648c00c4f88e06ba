/* cmd_analyze.c - `trainprof analyze FILE`: where the step time goes and
 * what to fix first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "analyze/text/render.h"
#include "cli_common.h"
#include "commands.h"

static const char USAGE[] =
    "usage: trainprof analyze [--json] [--top N] [-j N] FILE|RUN_DIR\n"
    "       trainprof analyze [--json] [-j N] [--summaries DIR] JOB_DIR\n"
    "       trainprof analyze --summary RANK_DIR|TRACE\n"
    "One streaming pass over a trace (trainprof, Kineto, torch, JAX; .gz ok; - = stdin):\n"
    "the mean step-time breakdown, GPU idle share, the top operations by self time and\n"
    "ranked findings - data loading, launch-bound GPU, tiny kernels, host<->device\n"
    "copies, exposed communication, optimizer step, synchronizations, step-time\n"
    "variance - each with its share of step time, the evidence and what to try.\n\n"
    "  --top N   operations listed per side (default 5, at most 16)\n"
    "  --json    machine-readable output\n"
    "  -j N      threads that parse the file (default: the cores it may run on; same output)\n"
    "A job's directory (several ranks) gets the cross-rank analysis instead; there\n"
    "  --summaries DIR  also writes each rank's summary to DIR/rank<r>.json\n"
    "  --summary        prints one rank's summary (a few KB of JSON) for\n"
    "                   `trainprof combine` (docs/DISTRIBUTED.md)\n"
    "Exit: 0 ok (findings are advice), 2 bad input.\n";

int cmd_analyze(int argc, char **argv)
{
    if (cli_ranks_wanted(argc, argv)) return cmd_ranks(argc, argv); /* a job directory */
    cli_init();
    const char *file = NULL;
    size_t top = 5;
    bool json = false;
    int rc = cli_parse_one_file(argc, argv, USAGE, &file, &json, &top);
    if (rc) return rc < 0 ? CLI_OK : rc;
    char *run_file = NULL;  /* a run directory reads as its (last) trace */
    if (tpa_is_dir(file)) {
        if (cli_run_last_trace("analyze", file, &run_file) != CLI_OK) return CLI_BAD_INPUT;
        file = run_file;
    }
    tpa_diagnosis d;
    tpa_error err;
    if (tpa_diagnose_file(file, &d, &err) != 0) { free(run_file); return cli_error(&err); }
    if (d.steps.truncated)
        fprintf(stderr, "trainprof: warning: %s: trace is truncated; analyzing the events before the cut\n", file);
    if (json) tpa_render_diagnosis_json(stdout, &d, top);
    else tpa_render_diagnosis_text(stdout, &d, top);
    tpa_diagnosis_free(&d);
    free(run_file);
    return CLI_OK;
}
