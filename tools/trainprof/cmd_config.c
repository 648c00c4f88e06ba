/*
 * trainprof config [--explain] [--json] [FILE.yaml] [-- FLAGS...]
 * trainprof config --markdown
 *
 * Prints the effective configuration: defaults < FILE (and
 * TRAINPROF_CONFIG) < TRAINPROF_* environment < FLAGS. --explain adds where
 * each value came from; --json prints the object the library writes into
 * the run directory (config.json); --markdown prints the key reference
 * (docs/CONFIG.md). Uses only the public API.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "trainprof.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: trainprof config [--explain] [--json] [FILE.yaml] [-- FLAGS...]\n"
            "       trainprof config --markdown\n"
            "\n"
            "Prints the effective profiling configuration: defaults < FILE.yaml (and\n"
            "TRAINPROF_CONFIG) < TRAINPROF_* environment < FLAGS (as a training program\n"
            "would get them, e.g. -- --enable_profiling True --profiling.wait=2).\n"
            "\n"
            "  --explain    show where each value came from\n"
            "  --json       the JSON written into the run directory (config.json)\n"
            "  --markdown   the key reference (docs/CONFIG.md)\n"
            "\n"
            "Exit status: 0 ok, 2 bad configuration or usage.\n");
}

typedef struct opts {
    int explain, json, markdown;
    const char *file;
    int dashdash; /* "--" given: FLAGS start at flags_at */
    int flags_at;
} opts;

static int parse_opts(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->flags_at = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            o->flags_at = i + 1;
            o->dashdash = 1;
            return 0;
        } else if (strcmp(a, "--explain") == 0) {
            o->explain = 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (strcmp(a, "--markdown") == 0) {
            o->markdown = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (a[0] == '-' || o->file) {
            fprintf(stderr, "trainprof config: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            o->file = a;
        }
    }
    return 0;
}

static int fail(const tp_error *err)
{
    fprintf(stderr, "trainprof config: %s\n", err->message);
    return 2;
}

/* Applies the FLAGS after "--"; anything not consumed is an error here. */
static int apply_flags(tp_config *cfg, int argc, char **argv, const opts *o, tp_error *err)
{
    int n = argc - o->flags_at + 1;
    char **args = argv + o->flags_at - 1; /* args[0] stands in for argv[0] */
    char *saved = args[0];
    args[0] = argv[0];
    int rc = tp_config_parse_args(cfg, &n, args, err);
    if (rc == 0 && n > 1) {
        fprintf(stderr, "trainprof config: not a profiling flag: '%s'\n", args[1]);
        rc = -1;
    } else if (rc != 0) {
        fail(err);
    }
    args[0] = saved;
    return rc;
}

int cmd_config(int argc, char **argv)
{
    opts o;
    tp_error err;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (o.markdown) {
        char *md = tp_config_reference_markdown();
        if (!md)
            return 2;
        fputs(md, stdout);
        tp_free(md);
        return 0;
    }
    tp_config *cfg = tp_config_new();
    if (!cfg)
        return 2;
    rc = 0;
    /* environment first, so FILE overlays TRAINPROF_CONFIG in the file layer
     * (the layers still give env precedence over both files) */
    if (tp_config_load_env(cfg, &err) != 0)
        rc = fail(&err);
    if (!rc && o.file && tp_config_load_file(cfg, o.file, &err) != 0)
        rc = fail(&err);
    if (!rc && o.dashdash && apply_flags(cfg, argc, argv, &o, &err) != 0)
        rc = 2;
    if (!rc) {
        char *text = o.json ? tp_config_to_json(cfg) : tp_config_describe(cfg, o.explain);
        if (text)
            fputs(text, stdout);
        tp_free(text);
        rc = text ? 0 : 2;
    }
    tp_config_free(cfg);
    return rc;
}
