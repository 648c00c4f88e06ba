/* cmd_diff.c - `trainprof diff A B`: what changed, and a CI gate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/text/render.h"
#include "analyze/page/html.h"
#include "cli_common.h"
#include "commands.h"

static const char USAGE[] =
    "usage: trainprof diff [options] A B\n"
    "Per-step and per-operation changes from trace A (baseline) to trace B,\n"
    "operations sorted by absolute change of total time, and the analyze findings\n"
    "whose share of step time moved (new, gone, worse, better).\n\n"
    "  --fail-if-slower PCT  exit 1 when B is more than PCT %% slower than A\n"
    "                        (mean step time; host self time when a trace has no steps)\n"
    "  --top N               operation rows (default 25, 0 = all)\n"
    "  --json                machine-readable output\n"
    "  --html OUT            write the two runs side by side as a page (OUT, one\n"
    "                        offline HTML file) instead of the text\n"
    "  -j N                  threads that parse each trace (default: the cores it may run on)\n"
    "Exit: 0 ok, 1 gate tripped, 2 bad input.\n";

int cmd_diff(int argc, char **argv)
{
    if (cli_ranks_wanted(argc, argv)) return cmd_ranks_diff(argc, argv); /* two job directories */
    cli_init();
    const char *cmd = argv[0], *files[2] = {0}, *v, *html = NULL;
    int nfiles = 0;
    bool json = false, gate = false;
    double limit = 0;
    size_t top = 25;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) { printf(USAGE); return CLI_OK; }
        int k = cli_jobs_opt(argc, argv, &i, NULL);
        if (k == CLI_ARG_ERROR) return CLI_BAD_INPUT;
        if (k == CLI_ARG_USED) continue;
        if (!strcmp(argv[i], "--json")) json = true;
        else if (cli_opt(argc, argv, &i, "--html", &v)) {
            if (!v || !*v) return cli_fail(cmd, "--html needs an output file, e.g. --html diff.html");
            html = v;
        }
        else if (cli_opt(argc, argv, &i, "--fail-if-slower", &v)) {
            char *end;
            if (!v || (limit = strtod(v, &end), end == v || *end) || !isfinite(limit))
                return cli_fail(cmd, "--fail-if-slower needs a percentage, e.g. 5");
            gate = true;
        } else if (cli_opt(argc, argv, &i, "--top", &v)) {
            if (!v || !cli_parse_size(v, &top)) return cli_fail(cmd, "--top needs a number");
        } else if (argv[i][0] == '-' && argv[i][1]) return cli_fail(cmd, "unknown option %s", argv[i]);
        else if (nfiles == 2) return cli_fail(cmd, "exactly two traces: A (baseline) and B");
        else files[nfiles++] = argv[i];
    }
    if (nfiles != 2) return cli_fail(cmd, "exactly two traces: A (baseline) and B");
    if (cli_stdin_to_file(&files[0]) != 0 || cli_stdin_to_file(&files[1]) != 0) return CLI_BAD_INPUT;
    tpa_diagnosis da, db;  /* one pass each: operations, steps and findings */
    tpa_error err;
    if (tpa_diagnose_file(files[0], &da, &err) != 0) return cli_error(&err);
    if (tpa_diagnose_file(files[1], &db, &err) != 0) { tpa_diagnosis_free(&da); return cli_error(&err); }
    int rc = CLI_OK;
    tpa_diff d;
    tpa_diff_compute(&d, &da.rep, &db.rep, &da.steps, &db.steps);
    tpa_diff_findings(&d, &da, &db);
    if (html) {
        if (tpa_diff_html(html, &d, &da, &db, &err) != 0) rc = cli_error(&err);
    } else if (json) tpa_render_diff_json(stdout, &d, &da.steps, &db.steps, top);
    else tpa_render_diff_text(stdout, &d, &da.steps, &db.steps, top);
    if (rc != CLI_OK) {
        /* the page could not be written: reported above */
    } else if (gate && d.metric_a <= 0) {
        /* an empty baseline must not let a regression gate pass */
        fprintf(stderr, "trainprof diff: %s has no %s to compare against: not a usable "
                        "baseline for --fail-if-slower\n", files[0], d.metric);
        rc = CLI_BAD_INPUT;
    } else if (gate && d.change_pct > limit) {
        fprintf(stderr, "trainprof diff: %s is %.2f%% slower (limit %.2f%%)\n", d.metric, d.change_pct, limit);
        rc = CLI_FINDINGS;
    }
    tpa_diff_free(&d);
    tpa_diagnosis_free(&da);
    tpa_diagnosis_free(&db);
    return rc;
}
