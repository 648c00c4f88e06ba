/*
 * Fuzz target: command-line flags and values. The input is split at '\n'
 * into argv (after a fixed argv[0]). Invariants: no crash; on success the
 * remaining arguments are the original ones minus the consumed flags, in
 * order; on failure argv and the configuration are unchanged. The same
 * lines are then fed to tp_config_set as KEY=VALUE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trainprof.h"

#define MAX_ARGS 64

static int split(char *text, char **argv)
{
    int argc = 0;
    argv[argc++] = "prog";
    for (char *p = text; p && argc < MAX_ARGS;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        argv[argc++] = p;
        p = nl ? nl + 1 : NULL;
    }
    argv[argc] = NULL;
    return argc;
}

static void check_parse(char *text)
{
    char *argv[MAX_ARGS + 1], *orig[MAX_ARGS + 1];
    int argc = split(text, argv);
    int n = argc;
    memcpy(orig, argv, sizeof argv);
    tp_config *cfg = tp_config_new();
    if (!cfg)
        return;
    char *before = tp_config_to_json(cfg);
    tp_error err;
    int rc = tp_config_parse_args(cfg, &n, argv, &err);
    if (rc == 0) {
        /* the kept arguments are a subsequence of the original, in order */
        int j = 0;
        for (int i = 0; i < n; i++) {
            while (j < argc && orig[j] != argv[i])
                j++;
            if (j == argc)
                abort();
            j++;
        }
        if (n > argc || (n < argc && argv[n] != NULL))
            abort();
    } else {
        char *after = tp_config_to_json(cfg);
        if (n != argc || memcmp(orig, argv, sizeof(char *) * (size_t)argc) != 0 || !before ||
            !after || strcmp(before, after) != 0)
            abort();
        tp_free(after);
    }
    tp_free(before);
    tp_config_free(cfg);
}

static void check_set(char *text)
{
    tp_config *cfg = tp_config_new();
    if (!cfg)
        return;
    for (char *line = text; line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            tp_config_set(cfg, line, eq + 1, NULL);
            const char *v = tp_config_get(cfg, line);
            (void)v;
        }
        line = nl ? nl + 1 : NULL;
    }
    char *d = tp_config_describe(cfg, 1);
    tp_free(d);
    tp_config_free(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *a = malloc(size + 1), *b = malloc(size + 1);
    if (a && b) {
        memcpy(a, data, size);
        a[size] = '\0';
        memcpy(b, a, size + 1);
        check_parse(a);
        check_set(b);
    }
    free(a);
    free(b);
    return 0;
}
