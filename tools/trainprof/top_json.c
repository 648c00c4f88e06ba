/* top_json.c - see top_json.h. Recursive descent, depth-limited. */
#include "top_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TJ_MAX_DEPTH 64

typedef struct tj_parser {
    tj_doc *d;
    const char *p, *start, *end;
    char *err;
    size_t errlen;
    int failed;
} tj_parser;

static int fail(tj_parser *ps, const char *what)
{
    if (!ps->failed && ps->err)
        snprintf(ps->err, ps->errlen, "byte offset %zu: %s", (size_t)(ps->p - ps->start), what);
    ps->failed = 1;
    return -1;
}

static void skip_ws(tj_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int new_node(tj_parser *ps, tj_type t)
{
    tj_doc *d = ps->d;
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        tj_node *nn = realloc(d->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            return fail(ps, "out of memory");
        d->nodes = nn;
        d->cap = cap;
    }
    tj_node *n = &d->nodes[d->n];
    memset(n, 0, sizeof *n);
    n->type = t;
    n->first = n->next = -1;
    return d->n++;
}

/* Appends bytes to the string block; the offset of the first, or -1. */
static long str_put(tj_parser *ps, const char *s, size_t n)
{
    tj_doc *d = ps->d;
    if (d->strs_len + n + 1 > d->strs_cap) {
        size_t cap = d->strs_cap ? d->strs_cap : 1024;
        while (cap < d->strs_len + n + 1)
            cap *= 2;
        char *b = realloc(d->strs, cap);
        if (!b)
            return fail(ps, "out of memory");
        d->strs = b;
        d->strs_cap = cap;
    }
    memcpy(d->strs + d->strs_len, s, n);
    long at = (long)d->strs_len;
    d->strs_len += n;
    return at;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static void put_utf8(tj_parser *ps, unsigned cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) { b[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { b[0] = (char)(0xC0 | cp >> 6); b[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12); b[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        b[0] = (char)(0xF0 | cp >> 18); b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    str_put(ps, b, n);
}

/* A string at ps->p (the opening quote): its offset in the string block. */
static long parse_string(tj_parser *ps)
{
    ps->p++;
    long at = (long)ps->d->strs_len;
    for (;;) {
        const char *run = ps->p;
        while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\\' && (unsigned char)*ps->p >= 0x20)
            ps->p++;
        if (ps->p > run && str_put(ps, run, (size_t)(ps->p - run)) < 0)
            return -1;
        if (ps->p >= ps->end)
            return fail(ps, "unterminated string");
        if ((unsigned char)*ps->p < 0x20)
            return fail(ps, "control character in a string");
        if (*ps->p == '"') {
            ps->p++;
            break;
        }
        if (ps->p + 1 >= ps->end)
            return fail(ps, "unterminated string");
        char c = ps->p[1];
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k = c ? strchr(from, c) : NULL;
        if (k) {
            str_put(ps, &to[k - from], 1);
            ps->p += 2;
            continue;
        }
        unsigned cp, lo;
        if (c != 'u' || ps->end - ps->p < 6 || hex4(ps->p + 2, &cp) != 0)
            return fail(ps, "bad escape in a string");
        ps->p += 6;
        if (cp >= 0xD800 && cp < 0xDC00) {
            if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
                hex4(ps->p + 2, &lo) != 0 || lo < 0xDC00 || lo >= 0xE000)
                return fail(ps, "unpaired surrogate in a string");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            ps->p += 6;
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            return fail(ps, "unpaired surrogate in a string");
        }
        put_utf8(ps, cp);
    }
    if (str_put(ps, "", 1) < 0) /* NUL */
        return -1;
    return ps->failed ? -1 : at;
}

static int parse_number(tj_parser *ps, int node)
{
    const char *s = ps->p;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
        return fail(ps, "expected a value");
    if (*ps->p == '0')
        ps->p++;
    else
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "digits expected after '.'");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "digits expected in the exponent");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    long at = str_put(ps, s, (size_t)(ps->p - s));
    if (at < 0 || str_put(ps, "", 1) < 0)
        return -1;
    ps->d->nodes[node].num = strtod(ps->d->strs + at, NULL);
    ps->d->nodes[node].str = (const char *)(intptr_t)(at + 1); /* offset + 1, fixed up at the end */
    return 0;
}

static int parse_value(tj_parser *ps, int depth);

/* Links child after *last under parent. */
static void link_child(tj_doc *d, int parent, int child, int *last)
{
    if (*last < 0)
        d->nodes[parent].first = child;
    else
        d->nodes[*last].next = child;
    *last = child;
    d->nodes[parent].count++;
}

static int parse_container(tj_parser *ps, int node, int depth, int is_obj)
{
    char close = is_obj ? '}' : ']';
    int last = -1;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return node;
    }
    for (;;) {
        long key = -1;
        if (is_obj) {
            if (ps->p >= ps->end || *ps->p != '"')
                return fail(ps, "expected a member name");
            if ((key = parse_string(ps)) < 0)
                return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return fail(ps, "expected ':'");
            ps->p++;
            skip_ws(ps);
        }
        int child = parse_value(ps, depth + 1);
        if (child < 0)
            return -1;
        if (is_obj)
            ps->d->nodes[child].key = (const char *)(intptr_t)(key + 1);
        link_child(ps->d, node, child, &last);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return node;
        }
        return fail(ps, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int literal(tj_parser *ps, const char *word, tj_type t, double v)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, "expected a value");
    int node = new_node(ps, t);
    if (node < 0)
        return -1;
    ps->d->nodes[node].num = v;
    ps->p += n;
    return node;
}

static int parse_value(tj_parser *ps, int depth)
{
    if (depth > TJ_MAX_DEPTH)
        return fail(ps, "nested too deeply");
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of the text");
    char c = *ps->p;
    if (c == '{' || c == '[') {
        int node = new_node(ps, c == '{' ? TJ_OBJ : TJ_ARR);
        return node < 0 ? -1 : parse_container(ps, node, depth, c == '{');
    }
    if (c == '"') {
        int node = new_node(ps, TJ_STR);
        long at = node < 0 ? -1 : parse_string(ps);
        if (at < 0)
            return -1;
        ps->d->nodes[node].str = (const char *)(intptr_t)(at + 1);
        return node;
    }
    if (c == 't')
        return literal(ps, "true", TJ_BOOL, 1);
    if (c == 'f')
        return literal(ps, "false", TJ_BOOL, 0);
    if (c == 'n')
        return literal(ps, "null", TJ_NULL, 0);
    int node = new_node(ps, TJ_NUM);
    if (node < 0 || parse_number(ps, node) < 0)
        return -1;
    return node;
}

int tj_parse(tj_doc *d, const char *text, size_t len, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    tj_parser ps = {d, text, text, text + len, err, errlen, 0};
    skip_ws(&ps);
    int root = parse_value(&ps, 0);
    if (root >= 0) {
        skip_ws(&ps);
        if (ps.p != ps.end)
            root = fail(&ps, "text after the JSON value");
    }
    if (root < 0) {
        tj_free(d);
        return -1;
    }
    /* string offsets (stored + 1, 0 = none) into pointers, now that the block stays put */
    for (int i = 0; i < d->n; i++) {
        tj_node *n = &d->nodes[i];
        if (n->str)
            n->str = d->strs + ((intptr_t)n->str - 1);
        if (n->key)
            n->key = d->strs + ((intptr_t)n->key - 1);
    }
    return 0;
}

void tj_free(tj_doc *d)
{
    free(d->nodes);
    free(d->strs);
    memset(d, 0, sizeof *d);
}

const tj_node *tj_root(const tj_doc *d)
{
    return d->n ? &d->nodes[0] : NULL;
}

const tj_node *tj_get(const tj_doc *d, const tj_node *obj, const char *key)
{
    if (!obj || obj->type != TJ_OBJ)
        return NULL;
    for (int i = obj->first; i >= 0; i = d->nodes[i].next)
        if (strcmp(d->nodes[i].key, key) == 0)
            return &d->nodes[i];
    return NULL;
}

const tj_node *tj_at(const tj_doc *d, const tj_node *arr, int idx)
{
    if (!arr || (arr->type != TJ_ARR && arr->type != TJ_OBJ))
        return NULL;
    int i = arr->first;
    for (int k = 0; i >= 0 && k < idx; k++)
        i = d->nodes[i].next;
    return i >= 0 ? &d->nodes[i] : NULL;
}

double tj_num(const tj_doc *d, const tj_node *obj, const char *key, double def)
{
    const tj_node *n = tj_get(d, obj, key);
    return n && n->type == TJ_NUM ? n->num : def;
}

uint64_t tj_u64(const tj_doc *d, const tj_node *obj, const char *key, uint64_t def)
{
    const tj_node *n = tj_get(d, obj, key);
    if (!n || n->type != TJ_NUM || n->str[0] == '-' || strpbrk(n->str, ".eE"))
        return def;
    return strtoull(n->str, NULL, 10);
}

const char *tj_str(const tj_doc *d, const tj_node *obj, const char *key, const char *def)
{
    const tj_node *n = tj_get(d, obj, key);
    return n && n->type == TJ_STR ? n->str : def;
}

int tj_bool(const tj_doc *d, const tj_node *obj, const char *key, int def)
{
    const tj_node *n = tj_get(d, obj, key);
    return n && n->type == TJ_BOOL ? (int)n->num : def;
}
