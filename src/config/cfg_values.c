/*
 * cfg_values.c - parsing and printing values of each key type.
 *
 * Accepted forms:
 *   bool      true/false, True/False, TRUE/FALSE, 1/0, yes/no, on/off
 *   int       decimal, optional sign, within the key's range
 *   duration  a number with an optional unit ns, us, ms, s, m/min, h; no
 *             unit = milliseconds. Stored as whole milliseconds (rounded up).
 *   size      a number with an optional unit B, K/KB/KiB, M/MB/MiB, G/GB/GiB,
 *             T/TB/TiB (all binary: 1 MB = 1 MiB = 2^20 bytes, as buffer
 *             sizes are usually meant); no unit = MiB. Stored as whole MiB
 *             (rounded up).
 *   enum      one of the key's choices
 *   list      choices separated by ',' ' ' or '+', "[a, b]" YAML flow style,
 *             or "none"/"" for the empty list
 *   string    any text without control characters
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/cfg_internal.h"

int tpc_parse_bool(const char *text, int *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on", "y"};
    static const char *const no[] = {"false", "0", "no", "off", "n"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

/* n-th choice of "a|b|c" into out; returns its length or -1. */
static int choice_at(const char *choices, int n, char *out, size_t outlen)
{
    const char *p = choices;
    for (int i = 0; i < n && p; i++) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p || !*p)
        return -1;
    size_t len = strcspn(p, "|");
    if (len >= outlen)
        return -1;
    memcpy(out, p, len);
    out[len] = '\0';
    return (int)len;
}

static int choice_index(const char *choices, const char *word, size_t len)
{
    char c[64];
    for (int i = 0; choice_at(choices, i, c, sizeof c) >= 0; i++)
        if (strlen(c) == len && strncasecmp(c, word, len) == 0)
            return i;
    return -1;
}

void tpc_value_accepted(int k, char *out, size_t outlen)
{
    const tpc_key *key = tpc_key_at(k);
    char c[64];
    switch (key->type) {
    case TPC_BOOL: {
        /* a bool may take more words after false|true (with_stack: native) */
        size_t used = (size_t)snprintf(out, outlen, "true/false, yes/no, on/off, 1/0");
        for (int i = 2; key->choices && choice_at(key->choices, i, c, sizeof c) >= 0 &&
                        used < outlen;
             i++)
            used += (size_t)snprintf(out + used, outlen - used, ", %s", c);
        break;
    }
    case TPC_INT:
        snprintf(out, outlen, "an integer from %" PRId64 " to %" PRId64, key->min, key->max);
        break;
    case TPC_DURATION:
        snprintf(out, outlen,
                 "a duration from %" PRId64 " to %" PRId64
                 " ms: a number with unit ns, us, ms, s, min or h (no unit = ms), e.g. 100ms, 2s",
                 key->min, key->max);
        break;
    case TPC_SIZE:
        snprintf(out, outlen,
                 "a size from %" PRId64 " MiB to %" PRId64
                 " MiB: a number with unit B, KB, MB, GB, TB or KiB, MiB, GiB, TiB (no unit = "
                 "MiB), e.g. 16MB, 1GiB",
                 key->min, key->max);
        break;
    case TPC_ENUM:
    case TPC_LIST: {
        size_t used = (size_t)snprintf(out, outlen, "%s",
                                       key->type == TPC_ENUM ? "one of " : "a list of ");
        for (int i = 0; choice_at(key->choices, i, c, sizeof c) >= 0 && used < outlen; i++)
            used += (size_t)snprintf(out + used, outlen - used, "%s%s", i ? ", " : "", c);
        if (key->type == TPC_LIST && used < outlen)
            snprintf(out + used, outlen - used, " (comma separated, or none)");
        break;
    }
    case TPC_STRING:
        snprintf(out, outlen, "text of 1 to %d bytes without control characters", (int)key->max);
        break;
    }
}

/* Reads a decimal number (digits with at most one '.', no sign, no
 * exponent) and points unit at what follows it. */
static int split_number(const char *text, double *num, const char **unit)
{
    char digits[64];
    while (isspace((unsigned char)*text))
        text++;
    size_t n = strspn(text, "0123456789.");
    const char *dot = memchr(text, '.', n);
    if (n == 0 || n >= sizeof digits || (dot && memchr(dot + 1, '.', n - (size_t)(dot - text) - 1)) ||
        (n == 1 && dot))
        return -1;
    memcpy(digits, text, n);
    digits[n] = '\0';
    *num = strtod(digits, NULL);
    if (!isfinite(*num))
        return -1;
    text += n;
    while (isspace((unsigned char)*text))
        text++;
    *unit = text;
    return 0;
}

typedef struct unit_factor {
    const char *name;
    double factor;
} unit_factor;

/* A number with an optional unit from units (no unit: factor 1) into *out. */
static int parse_with_unit(const char *text, const unit_factor *units, size_t n, double *out)
{
    double num;
    const char *unit;
    if (split_number(text, &num, &unit) != 0)
        return -1;
    size_t len = strlen(unit);
    while (len > 0 && isspace((unsigned char)unit[len - 1]))
        len--;
    if (len == 0) {
        *out = num;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (strlen(units[i].name) == len && strncasecmp(units[i].name, unit, len) == 0) {
            *out = num * units[i].factor;
            return 0;
        }
    }
    return -1;
}

static int parse_duration_ms(const char *text, double *ms)
{
    static const unit_factor units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"ms", 1},
                                        {"s", 1e3},   {"sec", 1e3}, {"m", 60e3},
                                        {"min", 60e3}, {"h", 3600e3}};
    return parse_with_unit(text, units, sizeof units / sizeof units[0], ms);
}

static int parse_size_mib(const char *text, double *mib)
{
    const double K = 1.0 / 1024, G = 1024, T = 1024.0 * 1024;
    const unit_factor units[] = {{"b", 1.0 / 1048576}, {"k", K},   {"kb", K},  {"kib", K},
                                 {"m", 1},             {"mb", 1},  {"mib", 1}, {"g", G},
                                 {"gb", G},            {"gib", G}, {"t", T},   {"tb", T},
                                 {"tib", T}};
    return parse_with_unit(text, units, sizeof units / sizeof units[0], mib);
}

static int parse_int(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    while (isspace((unsigned char)*text))
        text++;
    if (!*text)
        return -1;
    long long v = strtoll(text, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (errno == ERANGE || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_list(const tpc_key *key, const char *text, int64_t *bits)
{
    const char *p = text;
    *bits = 0;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '[')
        p++;
    for (;;) {
        p += strspn(p, " ,+\t");
        if (!*p || *p == ']')
            break;
        size_t len = strcspn(p, " ,+\t]");
        if (len == 4 && strncasecmp(p, "none", 4) == 0) {
            p += len;
            continue;
        }
        int idx = choice_index(key->choices, p, len);
        if (idx < 0)
            return -1;
        *bits |= (int64_t)1 << idx;
        p += len;
    }
    if (*p == ']')
        p++;
    p += strspn(p, " \t");
    return *p ? -1 : 0;
}

static int has_control_chars(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

/* The choice nearest to a wrong word (of an enum or list value), or "". */
static void nearest_choice(const tpc_key *key, const char *text, char *out, size_t outlen)
{
    char c[64], word[64];
    int best = 3;
    out[0] = '\0';
    for (const char *p = text; key->choices && *p;) {
        p += strspn(p, " ,+[]\t");
        size_t len = strcspn(p, " ,+[]\t");
        if (len == 0 || len >= sizeof word)
            break;
        memcpy(word, p, len);
        word[len] = '\0';
        p += len;
        if (choice_index(key->choices, word, len) >= 0)
            continue;
        for (int i = 0; choice_at(key->choices, i, c, sizeof c) >= 0; i++) {
            int d = tpc_edit_distance(word, c);
            if (d < best || (strncmp(word, c, len) == 0 && best > 1)) {
                best = d < 1 ? d : 1;
                snprintf(out, outlen, "%s", c);
            }
        }
        return;
    }
}

static int bad(int k, const char *text, const char *why, char *msg, size_t msglen)
{
    char accepted[256], near[64];
    const tpc_key *key = tpc_key_at(k);
    tpc_value_accepted(k, accepted, sizeof accepted);
    near[0] = '\0';
    if (key->type == TPC_ENUM || key->type == TPC_LIST)
        nearest_choice(key, text, near, sizeof near);
    snprintf(msg, msglen, "profiling.%s: `%.200s` %s; accepted: %s%s%s%s", key->name, text, why,
             accepted, near[0] ? " (did you mean `" : "", near, near[0] ? "`?)" : "");
    return TP_ERR_BAD_VALUE;
}

/* Numbers (int, duration, size) with range check; fractional units round up. */
static int parse_numeric(int k, const char *text, int64_t *out, char *msg, size_t msglen)
{
    const tpc_key *key = tpc_key_at(k);
    double v = 0;
    int rc = 0;
    if (key->type == TPC_INT) {
        rc = parse_int(text, out);
        if (rc != 0)
            return bad(k, text, "is not an integer", msg, msglen);
    } else {
        rc = key->type == TPC_DURATION ? parse_duration_ms(text, &v) : parse_size_mib(text, &v);
        if (rc != 0)
            return bad(k, text,
                       key->type == TPC_DURATION ? "is not a duration" : "is not a size", msg,
                       msglen);
        if (v > 9e15)
            return bad(k, text, "is out of range", msg, msglen);
        *out = (int64_t)ceil(v - 1e-9);
    }
    if (*out < key->min || *out > key->max)
        return bad(k, text, "is out of range", msg, msglen);
    return 0;
}

int tpc_value_parse(int k, const char *text, tpc_value *out, char *msg, size_t msglen)
{
    const tpc_key *key = tpc_key_at(k);
    int b;
    memset(out, 0, sizeof *out);
    if (!text)
        text = "";
    switch (key->type) {
    case TPC_BOOL:
        if (tpc_parse_bool(text, &b) == 0) {
            out->i = b;
            return 0;
        }
        out->i = key->choices ? choice_index(key->choices, text, strlen(text)) : -1;
        if (out->i < 2) /* only the extra words; false/true spellings are above */
            return bad(k, text, "is not a boolean", msg, msglen);
        return 0;
    case TPC_INT:
    case TPC_DURATION:
    case TPC_SIZE:
        return parse_numeric(k, text, &out->i, msg, msglen);
    case TPC_ENUM:
        out->i = choice_index(key->choices, text, strlen(text));
        if (out->i < 0)
            return bad(k, text, "is not accepted", msg, msglen);
        return 0;
    case TPC_LIST:
        if (parse_list(key, text, &out->i) != 0)
            return bad(k, text, "is not accepted", msg, msglen);
        return 0;
    case TPC_STRING:
        if (has_control_chars(text))
            return bad(k, "...", "contains control characters", msg, msglen);
        if (strlen(text) > (size_t)key->max) {
            char why[64];
            snprintf(why, sizeof why, "is too long (%d bytes at most)", (int)key->max);
            return bad(k, "...", why, msg, msglen);
        }
        if (text[0] == '\0')
            return bad(k, text, "is empty", msg, msglen);
        if (k == TPC_K_RANKS && tpi_ranks_select(text, 0, NULL) != 0)
            return bad(k, text, "is not `all` or a comma list of ranks and ranges (0,3,8-15)",
                       msg, msglen);
        strcpy(out->s, text);
        return 0;
    }
    return TP_ERR_INVALID;
}

void tpc_value_format(int k, const tpc_value *v, char *out, size_t outlen)
{
    const tpc_key *key = tpc_key_at(k);
    char c[64];
    size_t used = 0;
    switch (key->type) {
    case TPC_BOOL:
        if (v->i > 1 && key->choices && choice_at(key->choices, (int)v->i, c, sizeof c) >= 0)
            snprintf(out, outlen, "%s", c);
        else
            snprintf(out, outlen, "%s", v->i ? "true" : "false");
        break;
    case TPC_INT:
    case TPC_DURATION:
    case TPC_SIZE:
        snprintf(out, outlen, "%" PRId64, v->i);
        break;
    case TPC_ENUM:
        if (choice_at(key->choices, (int)v->i, c, sizeof c) < 0)
            c[0] = '\0';
        snprintf(out, outlen, "%s", c);
        break;
    case TPC_LIST:
        out[0] = '\0';
        for (int i = 0; choice_at(key->choices, i, c, sizeof c) >= 0 && used < outlen; i++)
            if (v->i & ((int64_t)1 << i))
                used += (size_t)snprintf(out + used, outlen - used, "%s%s", used ? "," : "", c);
        if (used == 0)
            snprintf(out, outlen, "none");
        break;
    case TPC_STRING:
        snprintf(out, outlen, "%s", v->s);
        break;
    }
}
