/* cmd_ranks.c - `trainprof analyze|steps|report JOB_DIR`: the ranks of one
 * job, and `analyze --summary RANK` (the map's output for one rank). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "analyze/text/render.h"
#include "cli_common.h"
#include "commands.h"

static const char USAGE[] =
    "usage: trainprof ranks|analyze|steps|report [--json] [-j N] [--summaries DIR] JOB_DIR\n"
    "       trainprof analyze --summary RANK_DIR|TRACE\n"
    "The ranks of one job (rank<r>/ directories written by trainprof, or Kineto traces\n"
    "of several ranks in one directory): a per-rank step-time table (mean, p50, p90,\n"
    "max, compute outside collectives, time in collectives, wait beyond the fastest\n"
    "rank, collective bytes per step), the straggler of each step and how often each\n"
    "rank is it, and findings (analyze, report); steps prints the table only.\n"
    "When ranks wrote hang captures (profiling.hang_timeout, docs/CAPTURES.md), says\n"
    "where each hung rank is and which did not arrive (`trainprof ranks JOB_DIR`).\n\n"
    "  -j N             read N ranks at once (default: the cores it may run on)\n"
    "  --summaries DIR  also write each rank's summary to DIR/rank<r>.json\n"
    "  --summary        print one rank's summary (a few KB of JSON): the map step,\n"
    "                   for `trainprof combine` to reduce (see docs/DISTRIBUTED.md)\n"
    "  --json           machine-readable output\n"
    "Exit: 0 ok, 2 bad input (no rank could be read).\n";

bool cli_is_run_dir(const char *dir)
{
    tpa_rank_input *in;
    size_t n;
    tpa_error err;
    if (!tpa_is_dir(dir) || tpa_job_inputs(dir, &in, &n, &err) != 0) return false;
    /* the directory itself (it has profiler_traces/) or one trace file in it;
     * a lone rank<r>/ directory is a job of one rank */
    bool one = n == 1 && (strcmp(in[0].path, dir) == 0 || !tpa_is_dir(in[0].path));
    tpa_job_inputs_free(in, n);
    return one;
}

bool cli_ranks_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* report --html OUT RUN_DIR: one run's page */
        if (strncmp(argv[i], "--html", 6) == 0) return false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--summary") == 0 || strcmp(argv[i], "--summaries") == 0)
            return true;
        if (argv[i][0] != '-' && tpa_is_dir(argv[i]) && !cli_is_run_dir(argv[i])) return true;
    }
    return false;
}

int cli_run_traces(const char *dir, char ***files, size_t *n)
{
    tpa_error err;
    memset(&err, 0, sizeof err);
    if (tpa_job_trace_files(dir, files, n, &err) != 0) return cli_error(&err);
    if (*n) return CLI_OK;
    free(*files);
    *files = NULL;
    fprintf(stderr, "trainprof: %s: a run directory without trace files (expected a trace file, or a run "
            "directory with traces in profiler_traces/)\n", dir);
    return CLI_BAD_INPUT;
}

int cli_run_last_trace(const char *cmd, const char *dir, char **file)
{
    char **files;
    size_t n;
    if (cli_run_traces(dir, &files, &n) != CLI_OK) return CLI_BAD_INPUT;
    *file = files[n - 1];
    if (n > 1)
        fprintf(stderr, "trainprof %s: %s is one run with %zu trace windows: reading the last, %s "
                "(trainprof report %s sums them all)\n", cmd, dir, n, *file, dir);
    for (size_t i = 0; i + 1 < n; i++) free(files[i]);
    free(files);
    return CLI_OK;
}

static int summary_of_one(const char *cmd, const char *path)
{
    tpa_rank_summary s;
    tpa_error err;
    memset(&err, 0, sizeof err);
    if (tpa_is_dir(path)) {
        tpa_rank_input *in;
        size_t n;
        if (tpa_job_inputs(path, &in, &n, &err) != 0) return cli_error(&err);
        int one = n == 1;
        int64_t hint = in[0].rank_hint;
        tpa_job_inputs_free(in, n);
        if (!one) return cli_fail(cmd, "--summary reads one rank; %s holds %zu (use --summaries DIR)", path, n);
        if (tpa_rank_map(path, hint, &s, &err) != 0) return cli_error(&err);
    } else if (tpa_rank_map(path, -1, &s, &err) != 0) {
        return cli_error(&err);
    }
    if (s.truncated) fprintf(stderr, "trainprof: warning: %s was cut short; summarizing the steps before the cut\n", path);
    tpa_rank_summary_write(stdout, &s);
    tpa_rank_summary_free(&s);
    return CLI_OK;
}

int cmd_ranks(int argc, char **argv)
{
    cli_init();
    const char *cmd = argv[0], *in = NULL, *summaries = NULL, *val;
    bool json = false, one = false;
    long jobs = cli_default_jobs();
    for (int i = 1; i < argc; i++) {
        int k = cli_jobs_opt(argc, argv, &i, &jobs);
        if (k == CLI_ARG_NONE) k = cli_common_arg(argc, argv, &i, USAGE, &json, NULL);
        if (k == CLI_ARG_USED) continue;
        if (k != CLI_ARG_NONE) return cli_arg_exit(k);
        if (cli_opt(argc, argv, &i, "--summaries", &val)) {
            if (!val) return cli_fail_missing(cmd, "--summaries");
            summaries = val;
        } else if (strcmp(argv[i], "--summary") == 0) {
            one = true;
        } else if (cli_positional(cmd, argv[i], &in) != 0) {
            return CLI_BAD_INPUT;
        }
    }
    if (!in) return cli_fail(cmd, "no job directory given");
    if (one) return summary_of_one(cmd, in);
    tpa_rank_input *inputs;
    size_t n;
    tpa_error err;
    memset(&err, 0, sizeof err);
    if (tpa_job_inputs(in, &inputs, &n, &err) != 0) return cli_error(&err);
    tpa_ranks *r = tpa_ranks_new();
    if (!r) abort();
    tpa_set_jobs(n >= (size_t)jobs ? 1 : (int)(jobs / (long)n));  /* threads per rank's reader */
    tpa_ranks_map_all(inputs, n, (int)jobs, r, summaries);
    tpa_job_hang hang;
    tpa_job_hang_read(inputs, n, &hang);
    r->hang = &hang;
    tpa_job_inputs_free(inputs, n);
    /* a hung job may have written no trace yet: its hang is the answer */
    int rc = hang.hung ? CLI_OK : cli_no_ranks(cmd, r, in);
    if (rc == CLI_OK && json) tpa_ranks_render_json(r, stdout);
    else if (rc == CLI_OK) tpa_ranks_render_text(r, stdout, strcmp(cmd, "steps") == 0);
    if (rc == CLI_OK && r->summaries_unwritten)  /* the map's output is the point of --summaries */
        rc = cli_fail(cmd, "%zu rank summary file(s) could not be written to %s", r->summaries_unwritten, summaries);
    tpa_ranks_free(r);
    tpa_job_hang_free(&hang);
    return rc;
}

int cli_no_ranks(const char *cmd, const struct tpa_ranks *r, const char *what)
{
    if (tpa_ranks_count(r)) return CLI_OK;
    for (size_t i = 0; i < r->n_warnings; i++) fprintf(stderr, "trainprof %s: %s\n", cmd, r->warnings[i]);
    fprintf(stderr, "trainprof %s: no rank of %s could be read\n", cmd, what);
    return CLI_BAD_INPUT;
}

int cli_job_trace_files(const char *dir, char ***files, size_t *n)
{
    tpa_rank_input *in;
    size_t n_in;
    tpa_error err;
    memset(&err, 0, sizeof err);
    *files = NULL;
    *n = 0;
    if (tpa_job_inputs(dir, &in, &n_in, &err) != 0) return cli_error(&err);
    for (size_t i = 0; i < n_in; i++) {
        char **part = NULL;
        size_t k = 0;
        if (tpa_is_dir(in[i].path)) {
            if (tpa_job_trace_files(in[i].path, &part, &k, &err) != 0) {
                tpa_error_print(stderr, &err);
                continue;
            }
            if (!k) fprintf(stderr, "trainprof: warning: %s: no trace files, rank left out\n", in[i].path);
        } else {
            part = malloc(sizeof *part);
            if (!part) abort();
            part[0] = in[i].path;
            in[i].path = NULL;
            k = 1;
        }
        char **grown = realloc(*files, (*n + k + 1) * sizeof *grown);
        if (!grown) abort();
        *files = grown;
        if (k) memcpy(*files + *n, part, k * sizeof *part);  /* part is NULL for a rank without traces */
        *n += k;
        free(part);
    }
    tpa_job_inputs_free(in, n_in);
    return CLI_OK;
}

static const char DIFF_USAGE[] =
    "usage: trainprof diff [--json] [--fail-if-slower PCT] JOB_A JOB_B\n"
    "Job-level change from job A (baseline) to job B: mean step time, compute and\n"
    "time in collectives per step, the straggler and its lead, the others' wait.\n\n"
    "  --fail-if-slower PCT  exit 1 when B's mean step is more than PCT %% slower\n"
    "  --json                machine-readable output\n"
    "Exit: 0 ok, 1 gate tripped, 2 bad input.\n";

static int job_stats(const char *dir, tpa_job_stats *st)
{
    tpa_rank_input *in;
    size_t n;
    tpa_error err;
    memset(&err, 0, sizeof err);
    if (tpa_job_inputs(dir, &in, &n, &err) != 0) return cli_error(&err);
    tpa_ranks *r = tpa_ranks_new();
    if (!r) abort();
    long jobs = cli_default_jobs();
    tpa_set_jobs(n >= (size_t)jobs ? 1 : (int)(jobs / (long)n));  /* threads per rank's reader */
    tpa_ranks_map_all(in, n, (int)jobs, r, NULL);
    tpa_job_inputs_free(in, n);
    tpa_ranks_job_stats(r, st);
    tpa_ranks_free(r);
    return st->ranks ? CLI_OK : cli_fail("diff", "no rank of %s could be read", dir);
}

static double pct(int64_t a, int64_t b) { return a > 0 ? 100.0 * (double)(b - a) / (double)a : 0.0; }

static void diff_row(const char *what, int64_t a, int64_t b)
{
    char x[24], y[24];
    tpa_fmt_dur(x, sizeof x, a);
    tpa_fmt_dur(y, sizeof y, b);
    printf("%-26s %14s %14s %+9.1f%%\n", what, x, y, pct(a, b));
}

int cmd_ranks_diff(int argc, char **argv)
{
    cli_init();
    const char *cmd = argv[0], *dirs[2] = {0}, *v;
    int n = 0;
    bool json = false, gate = false;
    double limit = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) { printf(DIFF_USAGE); return CLI_OK; }
        if (!strcmp(argv[i], "--json")) json = true;
        else if (cli_opt(argc, argv, &i, "--fail-if-slower", &v)) {
            char *end;
            if (!v || (limit = strtod(v, &end), end == v || *end)) return cli_fail(cmd, "--fail-if-slower needs a percentage");
            gate = true;
        } else if (argv[i][0] == '-' && argv[i][1]) return cli_fail(cmd, "unknown option %s", argv[i]);
        else if (n == 2 || !tpa_is_dir(argv[i])) return cli_fail(cmd, "exactly two job directories: A (baseline) and B");
        else dirs[n++] = argv[i];
    }
    if (n != 2) return cli_fail(cmd, "exactly two job directories: A (baseline) and B");
    tpa_job_stats a, b;
    int rc = job_stats(dirs[0], &a);
    if (!rc) rc = job_stats(dirs[1], &b);
    if (rc) return rc;
    double change = pct(a.step_mean_ns, b.step_mean_ns);
    if (json) {
        printf("{\"a\":{\"ranks\":%zu,\"step_mean_ns\":%lld,\"compute_mean_ns\":%lld,\"comm_mean_ns\":%lld,"
               "\"others_wait_ns\":%lld,\"straggler_rank\":%lld,\"straggler_lead_ns\":%lld},\n",
               a.ranks, (long long)a.step_mean_ns, (long long)a.compute_mean_ns, (long long)a.comm_mean_ns,
               (long long)a.others_wait_ns, (long long)a.straggler_rank, (long long)a.straggler_lead_ns);
        printf("\"b\":{\"ranks\":%zu,\"step_mean_ns\":%lld,\"compute_mean_ns\":%lld,\"comm_mean_ns\":%lld,"
               "\"others_wait_ns\":%lld,\"straggler_rank\":%lld,\"straggler_lead_ns\":%lld},\n"
               "\"step_change_pct\":%.3f}\n",
               b.ranks, (long long)b.step_mean_ns, (long long)b.compute_mean_ns, (long long)b.comm_mean_ns,
               (long long)b.others_wait_ns, (long long)b.straggler_rank, (long long)b.straggler_lead_ns, change);
    } else {
        printf("%-26s %14s %14s %10s\n", "", "A", "B", "change");
        printf("%-26s %14zu %14zu\n", "ranks", a.ranks, b.ranks);
        diff_row("mean step", a.step_mean_ns, b.step_mean_ns);
        diff_row("compute per step", a.compute_mean_ns, b.compute_mean_ns);
        diff_row("in collectives per step", a.comm_mean_ns, b.comm_mean_ns);
        diff_row("others' wait per step", a.others_wait_ns, b.others_wait_ns);
        diff_row("straggler lead (p50)", a.straggler_lead_ns, b.straggler_lead_ns);
        printf("%-26s %9lld %3.0f%% %9lld %3.0f%%\n", "straggler rank, share", (long long)a.straggler_rank,
               100 * a.straggler_share, (long long)b.straggler_rank, 100 * b.straggler_share);
    }
    if (gate && change > limit) {
        fprintf(stderr, "trainprof diff: mean step is %.2f%% slower (limit %.2f%%)\n", change, limit);
        return CLI_FINDINGS;
    }
    return CLI_OK;
}
