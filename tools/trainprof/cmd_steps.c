/* cmd_steps.c - `trainprof steps FILE`: one row per step with a breakdown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"

#include "analyze/text/render.h"
#include "cli_common.h"
#include "commands.h"

static const char USAGE[] =
    "usage: trainprof steps [--json] [-j N] FILE\n"
    "One row per ProfilerStep#N span: duration and a breakdown into kernel, memcpy,\n"
    "memset, communication, runtime, data loading, CPU execution and other. Each part\n"
    "counts only time no earlier part already covers, so the parts sum to the step.\n"
    "GPU util = share of the step with any kernel/copy/memset running.\n"
    "Then mean, median and p90 rows.\n\n"
    "  -j N      threads that parse the file (default: the cores it may run on; same output)\n"
    "  --json    machine-readable output\n"
    "Exit: 0 ok, 2 bad input.\n";

int cmd_steps(int argc, char **argv)
{
    if (cli_ranks_wanted(argc, argv)) return cmd_ranks(argc, argv); /* a job directory */
    cli_init();
    const char *file = NULL;
    bool json = false;
    int rc = cli_parse_one_file(argc, argv, USAGE, &file, &json, NULL);
    if (rc) return rc < 0 ? CLI_OK : rc;
    char *run_file = NULL;  /* a run directory reads as its (last) trace */
    if (tpa_is_dir(file)) {
        if (cli_run_last_trace("steps", file, &run_file) != CLI_OK) return CLI_BAD_INPUT;
        file = run_file;
    }
    tpa_steps_result res;
    tpa_error err;
    if (tpa_steps_file(file, &res, &err) != 0) { free(run_file); return cli_error(&err); }
    if (res.truncated)
        fprintf(stderr, "trainprof: warning: %s: trace is truncated; showing the steps before the cut\n", file);
    if (res.negative_durs) tpa_warn_negative(file, res.negative_durs, res.negative_at);
    if (json) tpa_render_steps_json(stdout, &res);
    else tpa_render_steps_text(stdout, &res);
    tpa_steps_free(&res);
    free(run_file);
    return CLI_OK;
}
