/* cmd_report.c - `trainprof report FILE...`: per-operation table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "analyze/page/html.h"
#include "analyze/text/render.h"
#include "trainprof.h"
#include "cli_common.h"
#include "commands.h"

static const char USAGE[] =
    "usage: trainprof report [options] FILE...\n"
    "       trainprof report --html OUT.html TRACE|RUN_DIR|JOB_DIR|RANK_TRACE...\n"
    "Per-operation table like torch's key_averages().table(): calls, self time,\n"
    "self %, total, avg, min, max. Host ops and one table per GPU device.\n"
    "FILE: Chrome/Kineto/trainprof trace, JSON array or object form, .gz ok, - = stdin.\n\n"
    "  --sort KEY      self (default), total, calls, avg, min, max, name\n"
    "  --top N         rows per table (default 30 in tables, all with --json; 0 = all)\n"
    "  --cat LIST      only these categories, e.g. cpu_op,kernel,user_annotation\n"
    "  --pid N --tid N only this process / thread\n"
    "  --steps A-B     only events starting inside ProfilerStep#A..#B\n"
    "  --no-group-steps  keep ProfilerStep#N apart (default: one ProfilerStep* row, as torch)\n"
    "  -j N            threads (default: the cores it may run on): several files are read at\n"
    "                  once, one large file is parsed in N parts; the output is the same\n"
    "                  as with -j 1\n"
    "  --json          machine-readable output\n"
    "  --html OUT      one self-contained HTML page instead (step time, throughput, memory,\n"
    "                  step breakdown, top operations, findings, configuration) from a\n"
    "                  trace or a run directory; opens offline in any browser; a job\n"
    "                  directory or several rank traces add the Distributed view\n"
    "Exit: 0 ok, 2 bad input.\n";

typedef struct report_args {
    tpa_report_opts o;
    const char *sort;
    const char *html;        /* --html OUT */
    size_t top;
    bool top_set, json;
    const char *files[256];
    int nfiles;
    long jobs;
} report_args;

static int parse(int argc, char **argv, report_args *a)
{
    const char *cmd = argv[0], *v;
    a->o.group_steps = true;
    a->sort = "self";
    a->jobs = cli_default_jobs();
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (cli_is_help(arg)) { fputs(USAGE, stdout); return -1; }
        int k = cli_jobs_opt(argc, argv, &i, &a->jobs);
        if (k == CLI_ARG_ERROR) return CLI_BAD_INPUT;
        if (k == CLI_ARG_USED) continue;
        if (!strcmp(arg, "--json")) { a->json = true; continue; }
        if (!strcmp(arg, "--no-group-steps")) { a->o.group_steps = false; continue; }
        if (cli_opt(argc, argv, &i, "--html", &v)) {
            if (!v || !*v) return cli_fail_missing(cmd, "--html");
            a->html = v;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--sort", &v)) {
            if (!v || !tpa_sort_key_valid(v)) return cli_fail(cmd, "--sort needs one of self,total,calls,avg,min,max,name");
            a->sort = v;
        } else if (cli_opt(argc, argv, &i, "--top", &v)) {
            if (!v || !cli_parse_size(v, &a->top)) return cli_fail(cmd, "--top needs a number");
            a->top_set = true;
        } else if (cli_opt(argc, argv, &i, "--cat", &v)) {
            if (!v || !*v) return cli_fail_missing(cmd, "--cat");
            a->o.cats = v;
        } else if (cli_opt(argc, argv, &i, "--pid", &v)) {
            if (!v || !cli_parse_i64(v, &a->o.pid)) return cli_fail(cmd, "--pid needs a number");
            a->o.has_pid = true;
        } else if (cli_opt(argc, argv, &i, "--tid", &v)) {
            if (!v || !cli_parse_i64(v, &a->o.tid)) return cli_fail(cmd, "--tid needs a number");
            a->o.has_tid = true;
        } else if (cli_opt(argc, argv, &i, "--steps", &v)) {
            if (!v || !tpa_parse_range(v, &a->o.steps)) return cli_fail(cmd, "--steps needs N or A-B");
        } else if (arg[0] == '-' && arg[1]) {
            return cli_fail(cmd, "unknown option %s", arg);
        } else if (a->nfiles < 256) {
            a->files[a->nfiles++] = arg;
        } else {
            return cli_fail(cmd, "too many files (256 at most)");
        }
    }
    if (!a->nfiles) return cli_fail(cmd, "no trace file given");
    if (a->html && a->nfiles > 64) return cli_fail(cmd, "--html takes one trace file, run or job directory, or up to 64 rank traces");
    return 0;
}

/* Replaces each run directory among the files by its trace files. */
static int expand_runs(report_args *a, char ***owned, size_t *n_owned)
{
    const char *in[256];
    int n_in = a->nfiles;
    memcpy(in, a->files, (size_t)n_in * sizeof *in);
    a->nfiles = 0;
    for (int i = 0; i < n_in; i++) {
        if (!tpa_is_dir(in[i])) {
            if (a->nfiles == 256) return cli_fail("report", "too many files (256 at most)");
            a->files[a->nfiles++] = in[i];
            continue;
        }
        char **files;
        size_t n;
        if (cli_run_traces(in[i], &files, &n) != CLI_OK) return CLI_BAD_INPUT;
        char **grown = realloc(*owned, (*n_owned + n) * sizeof *grown);
        if (!grown) abort();
        *owned = grown;
        for (size_t k = 0; k < n; k++) {
            (*owned)[(*n_owned)++] = files[k];
            if (a->nfiles == 256) { free(files); return cli_fail("report", "too many files (256 at most)"); }
            a->files[a->nfiles++] = files[k];
        }
        free(files);
    }
    return CLI_OK;
}

int cmd_report(int argc, char **argv)
{
    if (cli_ranks_wanted(argc, argv)) return cmd_ranks(argc, argv); /* a job directory */
    cli_init();
    report_args a;
    memset(&a, 0, sizeof a);
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (a.html && a.nfiles > 1) { /* the ranks of a job */
        tpa_error err;
        if (tpa_report_html_traces(a.files, a.nfiles, a.html, &err) != 0) return cli_error(&err);
        return CLI_OK;
    }
    if (a.html) {
        tp_error e;
        if (tp_report_html(a.files[0], a.html, &e) != 0) {
            fprintf(stderr, "trainprof: %s\n", e.message);
            return CLI_BAD_INPUT;
        }
        return CLI_OK;
    }
    char **owned = NULL;  /* run directories read as their traces */
    size_t n_owned = 0;
    if (expand_runs(&a, &owned, &n_owned) != CLI_OK) return CLI_BAD_INPUT;
    tpa_report rep;
    memset(&rep, 0, sizeof rep);
    tpa_error err;
    rc = tpa_report_files(&rep, a.files, a.nfiles, &a.o, (int)a.jobs, &err);
    for (size_t i = 0; i < n_owned; i++) free(owned[i]);
    free(owned);
    if (rc != 0) {
        tpa_report_free(&rep);
        return cli_error(&err);
    }
    tpa_sort_ops(&rep, a.sort);
    if (a.json) tpa_render_report_json(stdout, &rep, a.top_set ? a.top : 0);
    else tpa_render_report_text(stdout, &rep, a.top_set ? a.top : 30);
    tpa_report_free(&rep);
    return CLI_OK;
}
