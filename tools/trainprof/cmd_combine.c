/* cmd_combine.c - `trainprof combine SUMMARY...|DIR`: the reduce over rank
 * summaries written by `trainprof analyze --summary` (or --summaries DIR),
 * one summary in memory at a time. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "analyze/text/render.h"
#include "cli_common.h"
#include "commands.h"

static const char USAGE[] =
    "usage: trainprof combine [--json] SUMMARY... | DIR\n"
    "Reduces rank summaries (`trainprof analyze --summary RANK > rank<r>.json`, run\n"
    "anywhere, e.g. as a SLURM array) into the cross-rank analysis of the job: the\n"
    "same table and findings as `trainprof analyze JOB_DIR`. A directory stands for\n"
    "every *.json file in it. Memory: one summary at a time plus one small row per\n"
    "rank and per step.\n\n"
    "  --json    machine-readable output\n"
    "Exit: 0 ok, 2 bad input (no summary could be read).\n";

static void add_file(tpa_ranks *r, const char *path)
{
    tpa_rank_summary s;
    tpa_error err;
    memset(&err, 0, sizeof err);
    if (tpa_rank_summary_load(path, &s, &err) != 0) {
        tpa_ranks_add_failure(r, path, &err);
        return;
    }
    tpa_ranks_add(r, &s);
    tpa_rank_summary_free(&s);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int add_dir(tpa_ranks *r, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) abort();
            names = nn;
        }
        names[n] = malloc(strlen(dir) + len + 2);
        if (!names[n]) abort();
        sprintf(names[n++], "%s/%s", dir, de->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        add_file(r, names[i]);
        free(names[i]);
    }
    free(names);
    return 0;
}

int cmd_combine(int argc, char **argv)
{
    cli_init();
    const char *cmd = argv[0];
    bool json = false;
    int inputs = 0;
    tpa_ranks *r = tpa_ranks_new();
    if (!r) abort();
    for (int i = 1; i < argc; i++) {
        int k = cli_common_arg(argc, argv, &i, USAGE, &json, NULL);
        if (k == CLI_ARG_USED) continue;
        if (k != CLI_ARG_NONE) {
            tpa_ranks_free(r);
            return cli_arg_exit(k);
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            tpa_ranks_free(r);
            return cli_fail(cmd, "unknown option %s", argv[i]);
        }
        inputs++;
        if (tpa_is_dir(argv[i])) {
            if (add_dir(r, argv[i]) != 0) {
                tpa_ranks_free(r);
                return cli_fail(cmd, "cannot read directory %s", argv[i]);
            }
        } else add_file(r, argv[i]);
    }
    if (!inputs) {
        tpa_ranks_free(r);
        return cli_fail(cmd, "no summaries given");
    }
    int rc = cli_no_ranks(cmd, r, inputs == 1 ? argv[argc - 1] : "the summaries given");
    if (rc == CLI_OK && json) tpa_ranks_render_json(r, stdout);
    else if (rc == CLI_OK) tpa_ranks_render_text(r, stdout, false);
    tpa_ranks_free(r);
    return rc;
}
