/* Helpers for core tests that open real sessions in a temporary directory. */
#ifndef TP_TEST_CORE_COMMON_H
#define TP_TEST_CORE_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_test.h"
#include "trainprof.h"
#include "util/fileio.h"

/* A config writing into a fresh directory under /tmp; extra "key=value" pairs. */
static tp_config *test_config(const char *tag, const char *const *kv)
{
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/tp_core_%s_%d", tag, (int)getpid());
    tp_config *cfg = tp_config_new();
    tp_error err;
    if (tp_config_set(cfg, "log_dir", dir, &err) != 0)
        fprintf(stderr, "log_dir: %s\n", err.message);
    tp_config_set(cfg, "log_every", "0", &err);
    for (; kv && kv[0]; kv += 2)
        if (tp_config_set(cfg, kv[0], kv[1], &err) != 0)
            fprintf(stderr, "%s: %s\n", kv[0], err.message);
    return cfg;
}

/* Opens a session on test_config(tag, kv) and copies its run directory
 * into dir (n bytes). NULL (with a message) when it cannot be opened. */
static tp_session *open_test_session(const char *tag, const char *const *kv, char *dir, size_t n)
{
    tp_config *cfg = test_config(tag, kv);
    tp_error err;
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!s) {
        fprintf(stderr, "%s: cannot open a session: %s\n", tag, err.message);
        return NULL;
    }
    snprintf(dir, n, "%s", tp_session_dir(s));
    return s;
}

__attribute__((unused)) static char *read_in(const char *dir, const char *name)
{
    char path[1400], *data = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (tpu_read_file(path, &data, &len, NULL, 0) != 0)
        return NULL;
    return data;
}

/* Removes a run directory and the per-test log_dir holding it. */
static void rm_rf(const char *dir)
{
    tp_test_rm_rf(dir);
    char parent[1400];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if (strncmp(parent, "/tmp/tp_core_", 13) == 0)
            rmdir(parent);
    }
}

#endif
