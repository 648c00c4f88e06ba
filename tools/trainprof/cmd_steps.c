/* cmd_steps.c - `trainprof steps FILE`: one row per step with a breakdown. */
#include <stdio.h>
#include <string.h>

#include "analyze/render.h"
#include "cli_common.h"
#include "commands.h"

static const char USAGE[] =
    "usage: trainprof steps [--json] FILE\n"
    "One row per ProfilerStep#N span: duration and a breakdown into kernel, memcpy,\n"
    "memset, communication, runtime, data loading, CPU execution and other. Each part\n"
    "counts only time no earlier part already covers, so the parts sum to the step.\n"
    "GPU util = share of the step with any kernel/copy/memset running.\n"
    "Then mean, median and p90 rows.\n"
    "Exit: 0 ok, 2 bad input.\n";

int cmd_steps(int argc, char **argv)
{
    cli_init();
    const char *cmd = argv[0], *file = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) { fputs(USAGE, stdout); return CLI_OK; }
        if (!strcmp(argv[i], "--json")) json = true;
        else if (argv[i][0] == '-' && argv[i][1]) return cli_fail(cmd, "unknown option %s", argv[i]);
        else if (file) return cli_fail(cmd, "one trace file at a time");
        else file = argv[i];
    }
    if (!file) return cli_fail(cmd, "no trace file given");
    tpa_steps_result res;
    tpa_error err;
    if (tpa_steps_file(file, &res, &err) != 0) return cli_error(&err);
    if (res.truncated)
        fprintf(stderr, "trainprof: warning: %s: trace is truncated; showing the steps before the cut\n", file);
    if (json) tpa_render_steps_json(stdout, &res);
    else tpa_render_steps_text(stdout, &res);
    tpa_steps_free(&res);
    return CLI_OK;
}
