/* ranks_summary.c - a rank summary as JSON, and back (what travels from
 * the map to the reduce).
 *
 *   {"trainprof_rank_summary": 1, "rank": 2, "world_size": 4, "job_id": "...",
 *    "host": "...", "format": "trainprof", "source": "...", "has_base": true,
 *    "synced": true, "clock_error_ns": 120, "truncated": false,
 *    "device_comm": false, "files": 1,
 *    "comm": [["all_reduce", count, total_ns, bytes], ...],
 *    "steps": [[num, start_ns, dur_ns, comm_ns, overlap_ns, bytes], ...]}
 *
 * The parser accepts the members in any order and skips unknown ones, so
 * later versions can add members.
 */
#include "analyze/ranks/ranks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/json/json_scan.h"

static void put_str(FILE *f, const char *key, const char *v)
{
    fprintf(f, ",\"%s\":", key);
    tpa_json_str(f, v, strlen(v));
}

void tpa_rank_summary_write(FILE *f, const tpa_rank_summary *s)
{
    fprintf(f, "{\"trainprof_rank_summary\":1,\"rank\":%lld,\"world_size\":%lld", (long long)s->rank,
            (long long)s->world_size);
    put_str(f, "job_id", s->job_id);
    put_str(f, "host", s->host);
    put_str(f, "format", s->format);
    put_str(f, "source", s->source);
    fprintf(f, ",\"has_base\":%s,\"synced\":%s,\"clock_error_ns\":%lld,\"truncated\":%s,"
               "\"device_comm\":%s,\"files\":%d,\n\"comm\":[",
            s->has_base ? "true" : "false", s->synced ? "true" : "false",
            (long long)s->clock_error_ns, s->truncated ? "true" : "false",
            s->device_comm ? "true" : "false", s->files);
    for (size_t i = 0; i < s->n_comm; i++) {
        fputs(i ? ",[" : "[", f);
        tpa_json_str(f, s->comm[i].name, strlen(s->comm[i].name));
        fprintf(f, ",%llu,%lld,%lld]", (unsigned long long)s->comm[i].count,
                (long long)s->comm[i].total_ns, (long long)s->comm[i].bytes);
    }
    fputs("],\n\"steps\":[", f);
    for (size_t i = 0; i < s->n_steps; i++) {
        const tpa_rank_step *t = &s->steps[i];
        fprintf(f, "%s[%lld,%lld,%lld,%lld,%lld,%lld]", i ? ",\n" : "\n", (long long)t->num,
                (long long)t->start_ns, (long long)t->dur_ns, (long long)t->comm_ns,
                (long long)t->overlap_ns, (long long)t->bytes);
    }
    fputs("]}\n", f);
}

typedef struct parser {
    const char *p, *begin, *end;
    tpa_scanerr se;
    const char *why;
} parser;

static int expect(parser *ps, char c)
{
    ps->p = tpa_skip_ws(ps->p, ps->end);
    if (ps->p >= ps->end || *ps->p != c) {
        ps->why = c == ']' ? "expected ']'" : c == '[' ? "expected '['" : c == ':' ? "expected ':'" : "expected '{'";
        return -1;
    }
    ps->p++;
    return 0;
}

/* ',' (returns 1: another element follows) or the closing char (0). */
static int next_or_close(parser *ps, char close)
{
    ps->p = tpa_skip_ws(ps->p, ps->end);
    if (ps->p < ps->end && *ps->p == ',') { ps->p++; return 1; }
    if (ps->p < ps->end && *ps->p == close) { ps->p++; return 0; }
    ps->why = close == '}' ? "expected ',' or '}'" : "expected ',' or ']'";
    return -1;
}

static int get_i64(parser *ps, int64_t *out)
{
    tpa_num num;
    ps->p = tpa_skip_ws(ps->p, ps->end);
    if (tpa_scan_number(&ps->p, ps->end, &ps->se, &num) != SC_OK || !tpa_num_to_i64(&num, out)) {
        ps->why = "expected an integer";
        return -1;
    }
    return 0;
}

static int get_str(parser *ps, char *out, size_t cap)
{
    const char *s;
    size_t n, dn;
    bool esc;
    char tmp[1024];
    ps->p = tpa_skip_ws(ps->p, ps->end);
    if (ps->p >= ps->end || *ps->p != '"' || tpa_scan_string(&ps->p, ps->end, &ps->se, &s, &n, &esc) != SC_OK || n >= sizeof tmp ||
        tpa_decode_string(s, n, tmp, &dn, &ps->se) != SC_OK) {
        ps->why = "expected a string (under 1 KB)";
        return -1;
    }
    if (dn >= cap) dn = cap - 1;
    memcpy(out, tmp, dn);
    out[dn] = '\0';
    return 0;
}

static int get_bool(parser *ps, bool *out)
{
    ps->p = tpa_skip_ws(ps->p, ps->end);
    if ((size_t)(ps->end - ps->p) >= 4 && memcmp(ps->p, "true", 4) == 0) { *out = true; ps->p += 4; return 0; }
    if ((size_t)(ps->end - ps->p) >= 5 && memcmp(ps->p, "false", 5) == 0) { *out = false; ps->p += 5; return 0; }
    ps->why = "expected true or false";
    return -1;
}

/* [a, b, c, ...] of n integers. */
static int get_row(parser *ps, int64_t *v, size_t n)
{
    if (expect(ps, '[') != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        if (get_i64(ps, &v[i]) != 0) return -1;
        if (next_or_close(ps, ']') != (i + 1 < n)) { ps->why = "wrong number of fields in a row"; return -1; }
    }
    return 0;
}

static int get_steps(parser *ps, tpa_rank_summary *s)
{
    size_t cap = 0;
    if (expect(ps, '[') != 0) return -1;
    ps->p = tpa_skip_ws(ps->p, ps->end);
    if (ps->p < ps->end && *ps->p == ']') { ps->p++; return 0; }
    for (;;) {
        int64_t v[6];
        if (get_row(ps, v, 6) != 0) return -1;
        /* 0 <= overlap <= comm <= dur, times and bytes not negative: the
         * reduce's arithmetic relies on it */
        if (v[1] < 0 || v[2] < 0 || v[3] < 0 || v[3] > v[2] || v[4] < 0 || v[4] > v[3] || v[5] < 0) {
            ps->why = "step row out of range (needs 0 <= overlap <= comm <= dur, start and bytes >= 0)";
            return -1;
        }
        if (s->n_steps == cap) {
            cap = cap ? cap * 2 : 64;
            tpa_rank_step *ns = realloc(s->steps, cap * sizeof *ns);
            if (!ns) abort();
            s->steps = ns;
        }
        s->steps[s->n_steps++] = (tpa_rank_step){v[0], v[1], v[2], v[3], v[4], v[5]};
        int k = next_or_close(ps, ']');
        if (k <= 0) return k;
    }
}

static int get_comm(parser *ps, tpa_rank_summary *s)
{
    if (expect(ps, '[') != 0) return -1;
    ps->p = tpa_skip_ws(ps->p, ps->end);
    if (ps->p < ps->end && *ps->p == ']') { ps->p++; return 0; }
    for (;;) {
        tpa_rank_comm c;
        int64_t count;
        if (expect(ps, '[') != 0 || get_str(ps, c.name, sizeof c.name) != 0 || expect(ps, ',') != 0 ||
            get_i64(ps, &count) != 0 || expect(ps, ',') != 0 || get_i64(ps, &c.total_ns) != 0 ||
            expect(ps, ',') != 0 || get_i64(ps, &c.bytes) != 0 || expect(ps, ']') != 0)
            return -1;
        c.count = count < 0 ? 0 : (uint64_t)count;
        if (s->n_comm < TPA_RANK_COMM_NAMES) s->comm[s->n_comm++] = c;
        int k = next_or_close(ps, ']');
        if (k <= 0) return k;
    }
}

static int member(parser *ps, const char *key, tpa_rank_summary *s)
{
    bool b;
    if (strcmp(key, "rank") == 0) return get_i64(ps, &s->rank);
    if (strcmp(key, "world_size") == 0) return get_i64(ps, &s->world_size);
    if (strcmp(key, "clock_error_ns") == 0) return get_i64(ps, &s->clock_error_ns);
    if (strcmp(key, "job_id") == 0) return get_str(ps, s->job_id, sizeof s->job_id);
    if (strcmp(key, "host") == 0) return get_str(ps, s->host, sizeof s->host);
    if (strcmp(key, "format") == 0) return get_str(ps, s->format, sizeof s->format);
    if (strcmp(key, "source") == 0) return get_str(ps, s->source, sizeof s->source);
    if (strcmp(key, "files") == 0) {
        int64_t v;
        if (get_i64(ps, &v) != 0) return -1;
        s->files = (int)(v < 0 ? 0 : v > 1000000 ? 1000000 : v);
        return 0;
    }
    bool *flags[] = {&s->has_base, &s->synced, &s->truncated, &s->device_comm};
    const char *names[] = {"has_base", "synced", "truncated", "device_comm"};
    for (int i = 0; i < 4; i++)
        if (strcmp(key, names[i]) == 0) {
            if (get_bool(ps, &b) != 0) return -1;
            *flags[i] = b;
            return 0;
        }
    if (strcmp(key, "steps") == 0) return get_steps(ps, s);
    if (strcmp(key, "comm") == 0) return get_comm(ps, s);
    ps->p = tpa_skip_ws(ps->p, ps->end);
    if (tpa_skip_value(&ps->p, ps->end, &ps->se, 0) != SC_OK) { ps->why = "malformed value"; return -1; }
    return 0;
}

int tpa_rank_summary_parse(const char *text, size_t n, tpa_rank_summary *out, tpa_error *err)
{
    parser ps = {text, text, text + n, {0}, NULL};
    bool marked = false;
    memset(out, 0, sizeof *out);
    out->rank = out->world_size = -1;
    int rc = expect(&ps, '{');
    while (rc == 0) {
        char key[64];
        if (get_str(&ps, key, sizeof key) != 0 || expect(&ps, ':') != 0 || member(&ps, key, out) != 0) { rc = -1; break; }
        marked |= strcmp(key, "trainprof_rank_summary") == 0;
        int k = next_or_close(&ps, '}');
        if (k < 0) rc = -1;
        if (k <= 0) break;
    }
    if (rc == 0 && !marked) { ps.why = "not a rank summary (no \"trainprof_rank_summary\" member; make one with `trainprof analyze --summary`)"; rc = -1; }
    if (rc != 0 && err) {
        memset(err, 0, sizeof *err);
        tpa_error_set(err, TPA_ERR_SYNTAX, "%s", ps.why ? ps.why : ps.se.msg ? ps.se.msg : "malformed summary");
        err->offset = (uint64_t)(ps.p - ps.begin);
    }
    if (rc != 0)
        tpa_rank_summary_free(out);
    return rc;
}

int tpa_rank_summary_load(const char *path, tpa_rank_summary *out, tpa_error *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (!f) {
        tpa_error_set(err, TPA_ERR_IO, "cannot open: %s", strerror(errno));
        snprintf(err->file, sizeof err->file, "%s", path);
        return -1;
    }
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap);
            if (!nb) abort();
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {  /* a directory, an I/O error: the OS reason, not a parse error */
        int e = errno;
        fclose(f);
        free(buf);
        tpa_error_set(err, TPA_ERR_IO, "cannot read: %s", strerror(e));
        snprintf(err->file, sizeof err->file, "%s", path);
        return -1;
    }
    fclose(f);
    int rc = tpa_rank_summary_parse(buf, n, out, err);
    if (rc != 0) snprintf(err->file, sizeof err->file, "%s", path);
    free(buf);
    return rc;
}
