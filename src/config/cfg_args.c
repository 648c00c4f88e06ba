/*
 * cfg_args.c - command-line flags and environment variables.
 *
 * Flags consumed by tp_config_parse_args (everything else stays in argv, in
 * order; a lone "--" ends the scan and stays too):
 *   --profiling.KEY VALUE, --profiling.KEY=VALUE   (also -profiling.KEY)
 *   profiling.KEY=VALUE, +profiling.KEY=VALUE, ++profiling.KEY=VALUE (Hydra)
 *   --enable_profiling True, --enable_memory_profiling True,
 *   --enable_timing_profiling True, --profile_steps 100 (RAVE style: the
 *   "bare" spellings of the key table; generic names such as --log_dir stay
 *   the program's and need the profiling. prefix)
 * A boolean flag without a value (next argument not a boolean) means true.
 *
 * Environment: TRAINPROF_<KEY> for every key and alias (upper case), and
 * TRAINPROF_CONFIG=file.yaml, which is read into the file layer.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_internal.h"

extern char **environ;

/* What an argument is to us: not ours, or a flag with a key name. */
typedef struct flag_info {
    int ours;
    char name[128];    /* key spelling, "profiling." prefix kept if written */
    const char *value; /* after '=', or NULL */
    int hydra;         /* KEY=VALUE form: the value is required inline */
} flag_info;

static void split_name(const char *s, flag_info *f)
{
    const char *eq = strchr(s, '=');
    size_t len = eq ? (size_t)(eq - s) : strlen(s);
    if (len >= sizeof f->name)
        len = sizeof f->name - 1;
    memcpy(f->name, s, len);
    f->name[len] = '\0';
    f->value = eq ? eq + 1 : NULL;
}

static flag_info classify(const char *arg)
{
    flag_info f;
    memset(&f, 0, sizeof f);
    size_t plen = strlen(TPC_PREFIX);
    if (strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, TPC_PREFIX, plen) == 0) {
        split_name(arg + 2, &f);
        f.ours = 1;
    } else if (arg[0] == '-' && strncmp(arg + 1, TPC_PREFIX, plen) == 0) {
        split_name(arg + 1, &f);
        f.ours = 1;
    } else {
        const char *p = arg;
        while (*p == '+')
            p++;
        if (strncmp(p, TPC_PREFIX, plen) == 0 && strchr(p, '=')) {
            split_name(p, &f);
            f.ours = f.hydra = 1;
        } else if (strncmp(arg, "--", 2) == 0 && arg[2]) {
            split_name(arg + 2, &f);
            f.ours = tpc_key_find(f.name, 1) >= 0;
        }
    }
    return f;
}

/* Sets one flag; *i advances past a separate value. */
static int take_flag(tp_config *cfg, const flag_info *f, int argc, char **argv, int *i,
                     tp_error *err)
{
    char source[TPC_SRC_MAX];
    const char *value = f->value;
    snprintf(source, sizeof source, "flag %.*s", (int)strcspn(argv[*i], "="), argv[*i]);
    int k = tpc_key_find(f->name, 0);
    if (k >= 0 && !value) {
        tpc_value v;
        char msg[8];
        if (tpc_key_at(k)->type == TPC_BOOL) {
            value = "true";
            if (*i + 1 < argc && argv[*i + 1] &&
                tpc_value_parse(k, argv[*i + 1], &v, msg, sizeof msg) == 0)
                value = argv[++*i];
        } else if (*i + 1 < argc && argv[*i + 1]) {
            value = argv[++*i];
        } else {
            char accepted[320];
            tpc_value_accepted(k, accepted, sizeof accepted);
            return tpc_error(err, TP_ERR_BAD_VALUE, NULL, 0, 0, "%s: needs a value; accepted: %s",
                             source, accepted);
        }
    }
    return tpc_stage(cfg, TPC_L_FLAG, f->name, value ? value : "", source, NULL, 0, 0, err);
}

int tp_config_parse_args(tp_config *cfg, int *argc, char **argv, tp_error *err)
{
    tpc_batch b;
    if (!cfg || !argc || *argc < 0 || (*argc > 0 && !argv))
        return tpc_error(err, TP_ERR_INVALID, NULL, 0, 0, "tp_config_parse_args: NULL argument");
    int n = *argc, kept = 0, rc;
    char **keep = malloc(sizeof(char *) * (size_t)(n + 1));
    if (!keep)
        return tpc_error(err, TP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    rc = tpc_batch_begin(cfg, TPC_L_FLAG, &b, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        const char *a = argv[i];
        if (i == 0 || !a) {
            keep[kept++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            while (i < n)
                keep[kept++] = argv[i++];
            break;
        }
        flag_info f = classify(a);
        if (!f.ours)
            keep[kept++] = argv[i];
        else
            rc = take_flag(cfg, &f, n, argv, &i, err);
    }
    rc = tpc_batch_end(cfg, &b, rc, NULL, err);
    if (rc == 0) {
        memcpy(argv, keep, sizeof(char *) * (size_t)kept);
        if (kept < n)
            argv[kept] = NULL;
        *argc = kept;
    }
    free(keep);
    return rc;
}

/* "TRAINPROF_" + spelling in upper case. */
static void env_name(const char *spelling, char *out, size_t outlen)
{
    size_t used = (size_t)snprintf(out, outlen, "TRAINPROF_");
    for (const char *p = spelling; *p && used + 1 < outlen; p++)
        out[used++] = (char)toupper((unsigned char)*p);
    out[used] = '\0';
}

static int stage_env(tp_config *cfg, const char *spelling, tp_error *err)
{
    char var[96], source[128];
    env_name(spelling, var, sizeof var);
    const char *value = getenv(var);
    if (!value)
        return 0;
    snprintf(source, sizeof source, "env %s", var);
    return tpc_stage(cfg, TPC_L_ENV, spelling, value, source, NULL, 0, 0, err);
}

/* Every spelling of key k, aliases first so the canonical name wins. */
static int stage_key_env(tp_config *cfg, int k, tp_error *err)
{
    const tpc_key *key = tpc_key_at(k);
    char word[64];
    for (const char *p = key->aliases; p && *p;) {
        size_t len = strcspn(p, " ");
        if (len < sizeof word) {
            memcpy(word, p, len);
            word[len] = '\0';
            int rc = stage_env(cfg, word, err);
            if (rc)
                return rc;
        }
        p += len;
        p += strspn(p, " ");
    }
    return stage_env(cfg, key->name, err);
}

/* A TRAINPROF_ variable that is no key but close to one is a typo. */
static int check_unknown_env(tp_error *err)
{
    char lower[96];
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "TRAINPROF_", 10) != 0)
            continue;
        const char *name = *e + 10;
        size_t len = strcspn(name, "=");
        if (len < 4 || len >= sizeof lower)
            continue;
        for (size_t i = 0; i < len; i++)
            lower[i] = (char)tolower((unsigned char)name[i]);
        lower[len] = '\0';
        if (strcmp(lower, "config") == 0 || tpc_key_find(lower, 0) >= 0)
            continue;
        const char *near = tpc_key_suggest(lower);
        if (near) {
            char want[96];
            env_name(near, want, sizeof want);
            return tpc_error(err, TP_ERR_UNKNOWN_KEY, NULL, 0, 0,
                             "env TRAINPROF_%.*s: unknown key `profiling.%s`; did you mean "
                             "`%s` (%s)?",
                             (int)len, name, lower, near, want);
        }
    }
    return 0;
}

int tp_config_load_env(tp_config *cfg, tp_error *err)
{
    tpc_batch b;
    if (!cfg)
        return tpc_error(err, TP_ERR_INVALID, NULL, 0, 0, "tp_config_load_env: NULL config");
    const char *file = getenv("TRAINPROF_CONFIG");
    if (file && *file) {
        int rc = tp_config_load_file(cfg, file, err);
        if (rc)
            return rc;
    }
    int rc = check_unknown_env(err);
    if (rc)
        return rc;
    rc = tpc_batch_begin(cfg, TPC_L_ENV, &b, err);
    for (int k = 0; rc == 0 && k < TPC_NKEYS; k++)
        rc = stage_key_env(cfg, k, err);
    return tpc_batch_end(cfg, &b, rc, NULL, err);
}
