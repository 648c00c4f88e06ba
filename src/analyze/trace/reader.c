/* reader.c - streaming trace reader.
 *
 * Reads plain or gzip input in chunks into one growable window and walks the
 * document with a small state machine: top-level object members (metadata we
 * keep raw) and the traceEvents array, one element at a time. An element
 * that straddles the window end is re-parsed after a refill, so every parse
 * works on contiguous bytes and never copies event text.
 */
#include "analyze/trace/trace.h"
#include "analyze/trace/event_parse.h"
#include "analyze/trace/gunzip_whole.h"
#include "analyze/json/json_scan.h"
#include "analyze/trace/parallel.h"
#include "analyze/trace/split.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef TP_HAVE_ZLIB
#include <zlib.h>
#endif

#ifdef TP_SMALL_LIMITS
#define CHUNK (1u << 8)
#else
#define CHUNK (1u << 20)
#endif
#define MAX_WINDOW ((size_t)1 << 30)         /* one element may not exceed 1 GiB */
#define MAX_MEMBER_BYTES ((size_t)64 << 20)  /* raw top-level members kept */

#define PROGRESS_EVERY ((uint64_t)256 << 20)

static bool g_progress;  /* set by the CLI when stderr is a terminal */

void tpa_set_progress(bool on) { g_progress = on; }

enum state { S_START, S_OBJ_FIRST, S_OBJ_MEMBER, S_OBJ_NEXT, S_ARR_FIRST, S_ARR_ELEM,
             S_ARR_NEXT, S_END, S_DONE };

struct tpa_reader {
    char path[256];
    int fd;
#ifdef TP_HAVE_ZLIB
    gzFile gz;
#endif
    const char *mem; size_t mem_len, mem_pos;
    char *owned_mem;           /* a whole gzip file inflated by libdeflate */
    char *buf; size_t cap, len, pos;
    uint64_t buf_off;          /* input offset of buf[0] */
    bool eof, gz_truncated, lenient, in_events, saw_events;
    uint64_t with_ph;           /* events with a "ph": a bare array with none is not a trace */
    bool rows;                  /* reading a JSON array of rows, not a trace (tpa_reader_set_rows) */
    size_t max_read;           /* 0 = unlimited; tests use tiny reads */
    bool showed_progress;
    enum state st;
    size_t member_bytes;
    tpa_meta meta;
    tpa_strbufs sb;
    int64_t device_pids[64];   /* processes named "/device:..." (JAX/XLA) */
    size_t n_device_pids;
    /* -j N: traceEvents parsed a window at a time by N threads (parallel.h) */
    int jobs;
    tpa_batch *batch;
    bool batch_live;
    uint64_t batch_tried_at;   /* a batch from here proved nothing: go on alone */
    tpa_batch *ahead;          /* the next window, parsed while batch is handed out */
    bool ahead_live;
    char *ahead_buf; size_t ahead_cap, ahead_len;
    uint64_t ahead_off;        /* input offset of ahead_buf[0] */
    bool has_read_err;         /* a read ahead failed: reported when reached */
    /* tpa_reader_keep_last: the windows used up last (text and events),
     * oldest first from kept_first, while consumers may still read them */
    void (*release)(void *);
    void *release_arg;
    int keep, n_kept, kept_first;
    struct kept_window { tpa_batch *batch; char *buf; size_t cap; } kept[TPA_READER_MAX_KEEP];
    bool batch_gave;           /* the live batch has handed out events */
    tpa_event single;          /* tpa_reader_next_block's event when reading sequentially */
    tpa_error read_err;
};

/* ---- errors (errors.c has the shared part) ------------------------------------ */

static void fail_at(tpa_reader *r, tpa_error *err, const tpa_scanerr *e)
{
    if (!err) return;
    memset(err, 0, sizeof *err);
    snprintf(err->file, sizeof err->file, "%s", r->path);
    err->code = e->code;
    const char *at = e->at ? e->at : r->buf + r->pos;
    err->offset = r->buf_off + (uint64_t)(at - r->buf);
    snprintf(err->msg, sizeof err->msg, "%s", e->msg);
    tpa_error_excerpt(err, r->buf, at, r->buf + r->len);
}

static void fail_plain(tpa_reader *r, tpa_error *err, int code, const char *msg)
{
    if (!err) return;
    memset(err, 0, sizeof *err);
    snprintf(err->file, sizeof err->file, "%s", r->path);
    err->code = code;
    err->offset = r->buf_off + r->len;
    snprintf(err->msg, sizeof err->msg, "%s", msg);
}

/* ---- input -------------------------------------------------------------- */

static tpa_reader *reader_new(const char *path)
{
    tpa_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    snprintf(r->path, sizeof r->path, "%s", path);
    r->fd = -1;
    r->jobs = tpa_jobs();
    r->batch_tried_at = UINT64_MAX;
    r->cap = CHUNK;
    r->buf = malloc(r->cap);
    if (!r->buf) { free(r); return NULL; }
    return r;
}

tpa_reader *tpa_reader_open(const char *path, tpa_error *err)
{
    tpa_reader *r = reader_new(path);
    if (!r) { tpa_error_set(err, TPA_ERR_IO, "out of memory"); return NULL; }
    r->fd = strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY);
    if (r->fd < 0) {
        if (err) {
            memset(err, 0, sizeof *err);
            snprintf(err->file, sizeof err->file, "%s", path);
            tpa_error_set(err, TPA_ERR_IO, "cannot open: %s", strerror(errno));
        }
        tpa_reader_close(r);
        return NULL;
    }
    if (tpa_gunzip_whole(r->fd, &r->owned_mem, &r->mem_len)) {  /* fast path: fits in memory */
        r->mem = r->owned_mem;
        close(r->fd);
        r->fd = -1;
        return r;
    }
#ifdef TP_HAVE_ZLIB
    /* gzread passes plain input through (reading large requests directly into
     * our buffer), so one path serves both. */
    r->gz = gzdopen(r->fd, "rb");
    if (!r->gz) {
        tpa_error_set(err, TPA_ERR_IO, "cannot open %s", path);
        tpa_reader_close(r);
        return NULL;
    }
    r->fd = -1;
    gzbuffer(r->gz, 1u << 17);
#endif
    return r;
}

tpa_reader *tpa_reader_open_mem(const void *data, size_t size, tpa_error *err)
{
    tpa_reader *r = reader_new("<memory>");
    if (!r) { tpa_error_set(err, TPA_ERR_IO, "out of memory"); return NULL; }
    r->mem = data;
    r->mem_len = size;
    return r;
}

void tpa_reader_set_rows(tpa_reader *r, bool rows) { r->rows = rows; }

void tpa_reader_set_lenient(tpa_reader *r, bool lenient) { r->lenient = lenient; }
void tpa_reader_set_max_read(tpa_reader *r, size_t n) { r->max_read = n; }

void tpa_reader_keep_last(tpa_reader *r, int calls, void (*release)(void *), void *arg)
{
    r->keep = calls < 1 ? 1 : calls > TPA_READER_MAX_KEEP ? TPA_READER_MAX_KEEP : calls;
    r->release = release;
    r->release_arg = arg;
}

/* Before memory the last call's events may point into is reused. */
static void release_last(tpa_reader *r)
{
    if (r->release) r->release(r->release_arg);
}
const tpa_meta *tpa_reader_meta(const tpa_reader *r) { return &r->meta; }

void tpa_reader_close(tpa_reader *r)
{
    if (!r) return;
    if (r->showed_progress) fputs("\r\033[K", stderr);
#ifdef TP_HAVE_ZLIB
    if (r->gz) gzclose(r->gz);
#endif
    if (r->fd >= 0) close(r->fd);
    for (size_t i = 0; i < r->meta.n_members; i++) {
        free(r->meta.members[i].key);
        free(r->meta.members[i].raw);
    }
    free(r->meta.members);
    free(r->owned_mem);
    tpa_batch_free(r->ahead);  /* waits for its threads */
    tpa_batch_free(r->batch);
    for (int i = 0; i < r->n_kept; i++) {
        struct kept_window *k = &r->kept[(r->kept_first + i) % TPA_READER_MAX_KEEP];
        tpa_batch_free(k->batch);
        free(k->buf);
    }
    free(r->ahead_buf);
    tpa_strbufs_free(&r->sb);
    free(r->buf);
    free(r);
}

static long read_some(tpa_reader *r, char *dst, size_t n, tpa_error *err)
{
    if (r->max_read && n > r->max_read)
        n = r->max_read;
    if (r->mem) {
        size_t left = r->mem_len - r->mem_pos;
#ifdef TP_SMALL_LIMITS
        if (n > 7) n = 7;  /* odd small reads shake out refill bugs */
#endif
        if (n > left) n = left;
        memcpy(dst, r->mem + r->mem_pos, n);
        r->mem_pos += n;
        return (long)n;
    }
#ifdef TP_HAVE_ZLIB
    int got = gzread(r->gz, dst, (unsigned)(n > (1u << 30) ? (1u << 30) : n));
    int zerr = 0;
    const char *zmsg = got <= 0 ? gzerror(r->gz, &zerr) : NULL;
    if (got < 0 || (zmsg && zerr != Z_OK && zerr != Z_BUF_ERROR)) {
        if (err) {
            memset(err, 0, sizeof *err);
            snprintf(err->file, sizeof err->file, "%s", r->path);
            err->code = zerr == Z_ERRNO ? TPA_ERR_IO : TPA_ERR_GZIP;
            err->offset = r->buf_off + r->len;
            const char *why = zerr == Z_ERRNO ? strerror(errno) : zmsg ? zmsg : "unknown";
            const char *colon = strstr(why, ">: ");  /* drop zlib's "<fd:3>: " prefix */
            if (colon) why = colon + 3;
            if (strstr(why, "incorrect data check") || strstr(why, "incorrect length check")) {
                /* where the checked field is, in the compressed file (zlib
                 * stops just after it: CRC32 then ISIZE, 4 bytes each): the
                 * same for any read sizes (-j N), unlike how much data came out */
                bool crc = strstr(why, "data") != NULL;
                long long end = (long long)gzoffset(r->gz), at = end - (crc ? 4 : 8);
                err->offset = at > 0 ? (uint64_t)at : 0;
                snprintf(err->msg, sizeof err->msg, "corrupt gzip stream: %s mismatch in the trailer at the "
                         "end of the stream (this offset is in the compressed file)",
                         crc ? "CRC" : "length");
            } else
                snprintf(err->msg, sizeof err->msg, "%s: %s",
                         zerr == Z_ERRNO ? "read error" : "corrupt gzip stream", why);
        }
        return -1;
    }
    if (got == 0 && zerr == Z_BUF_ERROR)
        r->gz_truncated = true;  /* compressed stream cut short */
    return got;
#else
    ssize_t got = read(r->fd, dst, n);
    if (got < 0) fail_plain(r, err, TPA_ERR_IO, strerror(errno));
    if (r->buf_off == 0 && r->len == 0 && got >= 2 && (unsigned char)dst[0] == 0x1f &&
        (unsigned char)dst[1] == 0x8b) {
        fail_plain(r, err, TPA_ERR_GZIP, "gzip input, but built without zlib");
        return -1;
    }
    return got;
#endif
}

static void note_bytes_read(tpa_reader *r, uint64_t total)
{
    uint64_t before = r->meta.bytes;
    r->meta.bytes = total;
    if (g_progress && before / PROGRESS_EVERY != total / PROGRESS_EVERY) {
        fprintf(stderr, "\rtrainprof: %s: %llu MB read", r->path, (unsigned long long)(total >> 20));
        r->showed_progress = true;
    }
}

/* Drops consumed bytes, grows the window when one element fills it, reads more.
 * Returns 1 when bytes were added, 0 at end of input, -1 on error. */
static int refill(tpa_reader *r, tpa_error *err)
{
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->buf_off += r->pos;
        r->pos = 0;
    }
    if (r->len == r->cap) {
        if (r->cap >= MAX_WINDOW) {
            fail_plain(r, err, TPA_ERR_LIMIT, "a single JSON value is larger than 1 GiB");
            return -1;
        }
        char *nb = realloc(r->buf, r->cap * 2);
        if (!nb) { fail_plain(r, err, TPA_ERR_LIMIT, "out of memory"); return -1; }
        r->buf = nb;
        r->cap *= 2;
    }
    long got = read_some(r, r->buf + r->len, r->cap - r->len, err);
    if (got < 0) return -1;
    if (got == 0) { r->eof = true; return 0; }
    r->len += (size_t)got;
    note_bytes_read(r, r->buf_off + r->len);
    return 1;
}

/* ---- top-level members ------------------------------------------------------ */

static void read_trainprof_meta(tpa_meta *m, const char *v, const char *end)
{
    int64_t x;
    if (tpa_value_i64(tpa_obj_find(v, end, "base_time_ns"), end, &x)) { m->has_base = true; m->base_ns = x; }
    if (tpa_value_i64(tpa_obj_find(v, end, "rank"), end, &x)) { m->has_rank = true; m->rank = x; }
    tpa_value_str(tpa_obj_find(v, end, "host"), end, m->host, sizeof m->host);
}

/* Picks alignment facts out of one complete member value. */
static void note_member(tpa_meta *m, const char *k, size_t kn, const char *v, const char *end)
{
    int64_t x;
    if (kn == 19 && memcmp(k, "baseTimeNanoseconds", 19) == 0) {
        if (!m->has_base && tpa_value_i64(v, end, &x)) { m->has_base = true; m->base_ns = x; }
    } else if (kn == 15 && memcmp(k, "distributedInfo", 15) == 0) {
        if (!m->has_rank && tpa_value_i64(tpa_obj_find(v, end, "rank"), end, &x)) { m->has_rank = true; m->rank = x; }
    } else if (kn == 9 && memcmp(k, "trainprof", 9) == 0) {
        read_trainprof_meta(m, v, end);
    } else if ((kn == 8 && memcmp(k, "metadata", 8) == 0) || (kn == 9 && memcmp(k, "otherData", 9) == 0)) {
        const char *t = tpa_obj_find(v, end, "trainprof");
        if (t) read_trainprof_meta(m, t, end);
    } else if (kn == 9 && memcmp(k, "host_name", 9) == 0 && !m->host[0]) {
        tpa_value_str(v, end, m->host, sizeof m->host);
    }
}

static void keep_member(tpa_reader *r, const char *k, size_t kn, const char *v, size_t vn)
{
    if (r->member_bytes + vn > MAX_MEMBER_BYTES)
        return;
    tpa_member *nm = realloc(r->meta.members, (r->meta.n_members + 1) * sizeof *nm);
    if (!nm) return;
    r->meta.members = nm;
    tpa_member *m = &nm[r->meta.n_members];
    m->key = malloc(kn + 1);
    m->raw = malloc(vn + 1);
    if (!m->key || !m->raw) { free(m->key); free(m->raw); return; }
    memcpy(m->key, k, kn); m->key[kn] = 0;
    memcpy(m->raw, v, vn); m->raw[vn] = 0;
    m->raw_len = vn;
    r->member_bytes += vn;
    r->meta.n_members++;
}

static int step_member(tpa_reader *r, const char **pp, const char *end, tpa_scanerr *e)
{
    const char *k; size_t kn; bool esc;
    int rc;
    if (**pp != '"') {
        e->at = *pp; e->code = TPA_ERR_SYNTAX; e->msg = "expected a string key";
        return SC_ERR;
    }
    if ((rc = tpa_scan_string(pp, end, e, &k, &kn, &esc)) != SC_OK) return rc;
    const char *p = tpa_skip_ws(*pp, end);
    if (p >= end) return SC_MORE;
    if (*p != ':') { e->at = p; e->code = TPA_ERR_SYNTAX; e->msg = "expected ':' after key"; return SC_ERR; }
    p = tpa_skip_ws(p + 1, end);
    if (p >= end) return SC_MORE;
    if (kn == 11 && memcmp(k, "traceEvents", 11) == 0) {
        if (*p != '[') { e->at = p; e->code = TPA_ERR_FORMAT; e->msg = "traceEvents is not an array"; return SC_ERR; }
        *pp = p + 1;
        r->st = S_ARR_FIRST;
        r->in_events = true;
        r->saw_events = true;
        return SC_OK;
    }
    const char *v = p;
    if ((rc = tpa_skip_value(&p, end, e, 1)) != SC_OK) return rc;
    note_member(&r->meta, k, kn, v, end);  /* window end: numbers need a terminator */
    keep_member(r, k, kn, v, (size_t)(p - v));
    *pp = p;
    r->st = S_OBJ_NEXT;
    return SC_OK;
}

/* ---- the state machine ------------------------------------------------------ */

static int syntax(tpa_scanerr *e, const char *at, const char *msg)
{
    e->at = at; e->code = TPA_ERR_SYNTAX; e->msg = msg;
    return SC_ERR;
}

/* Remembers where a valid prefix of the document ends and how to close it. */
static void note_good_end(tpa_reader *r)
{
    const char *close;
    switch (r->st) {
    case S_ARR_FIRST: case S_ARR_NEXT: close = r->meta.object_form ? "]}" : "]"; break;
    case S_OBJ_FIRST: case S_OBJ_NEXT: close = "}"; break;
    case S_END: close = ""; break;
    default: return;
    }
    r->meta.good_end = r->buf_off + r->pos;
    /* "]}", "]", "}" or "": the first two bytes tell them apart */
    if (r->meta.close[0] != close[0] || (close[0] && r->meta.close[1] != close[1]))
        memcpy(r->meta.close, close, strlen(close) + 1);
}

/* XLA traces name device processes "/device:GPU:0" (or TPU) in a
 * process_name metadata event before their events; mark those events. */
static void note_device_pid(tpa_reader *r, tpa_event *ev)
{
    for (size_t i = 0; i < r->n_device_pids; i++)
        if (r->device_pids[i] == ev->pid) {
            ev->on_device = ev->ph != 'M';
            ev->kind = (int8_t)tpa_classify(ev);  /* a device's events are classified as such */
            return;
        }
    static const char pre[] = "/device:";
    if (ev->ph == 'M' && ev->name.n == 12 && memcmp(ev->name.p, "process_name", 12) == 0 &&
        ev->arg_name.n >= sizeof pre - 1 && memcmp(ev->arg_name.p, pre, sizeof pre - 1) == 0 &&
        r->n_device_pids < sizeof r->device_pids / sizeof r->device_pids[0])
        r->device_pids[r->n_device_pids++] = ev->pid;
}

/* One step from r->pos. On SC_OK the consumed bytes are committed; *got_event
 * is set when ev was filled. */
static int step(tpa_reader *r, tpa_event *ev, bool *got_event, tpa_scanerr *e)
{
    const char *p = r->buf + r->pos, *end = r->buf + r->len;
    p = tpa_skip_ws(p, end);
    if (r->st == S_START && end - p < 3 && !r->eof && memcmp(p, "\xEF\xBB\xBF", (size_t)(end - p)) == 0)
        return SC_MORE;  /* a BOM split by the read: wait for all of it */
    if (r->st == S_START && end - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p = tpa_skip_ws(p + 3, end);
    if (p >= end) { r->pos = (size_t)(p - r->buf); return SC_MORE; }
    int rc = SC_OK;
    const char *start = p;
    switch (r->st) {
    case S_START:
        if (*p == '[') { r->st = S_ARR_FIRST; r->in_events = true; p++; }
        else if (*p == '{') { r->st = S_OBJ_FIRST; r->meta.object_form = true; p++; }
        else { e->at = p; e->code = TPA_ERR_FORMAT; e->msg = "not a JSON trace: expected '[' or '{'"; return SC_ERR; }
        break;
    case S_OBJ_FIRST:
        if (*p == '}') { r->st = S_END; p++; break; }
        /* fall through */
    case S_OBJ_MEMBER:
        rc = step_member(r, &p, end, e);
        break;
    case S_OBJ_NEXT:
        if (*p == ',') { r->st = S_OBJ_MEMBER; p++; }
        else if (*p == '}') { r->st = S_END; p++; }
        else return syntax(e, p, "expected ',' or '}' after a top-level member");
        break;
    case S_ARR_FIRST:
        if (*p == ']') { r->in_events = false; r->st = r->meta.object_form ? S_OBJ_NEXT : S_END; p++; break; }
        /* fall through */
    case S_ARR_ELEM:
    element:
        if (*p == '{') {
            rc = tpa_parse_event(&p, end, ev, &r->sb, e);
            if (rc == SC_OK) {
                note_device_pid(r, ev);
                ev->offset = r->buf_off + (uint64_t)(start - r->buf);
                r->meta.events++;
                r->with_ph += ev->ph != 0;
                *got_event = true;
            }
        } else {
            rc = tpa_skip_value(&p, end, e, 1);
            if (rc == SC_OK) r->meta.non_objects++;
        }
        if (rc == SC_OK) r->st = S_ARR_NEXT;
        break;
    case S_ARR_NEXT:
        if (*p == ',') {  /* and the element after it in the same step */
            r->st = S_ARR_ELEM;
            r->pos = (size_t)(p + 1 - r->buf);  /* committed: the element may need a refill */
            p = tpa_skip_ws(p + 1, end);
            if (p >= end) return SC_MORE;
            start = p;
            goto element;
        }
        else if (*p == ']') { r->in_events = false; r->st = r->meta.object_form ? S_OBJ_NEXT : S_END; p++; }
        else return syntax(e, p, "expected ',' or ']' after an event");
        break;
    case S_END:
        return syntax(e, p, "unexpected data after the end of the document");
    case S_DONE:
        return SC_OK;
    }
    if (rc != SC_OK) return rc;
    r->pos = (size_t)(p - r->buf);
    note_good_end(r);
    return SC_OK;
}

static void mark_truncated(tpa_reader *r, uint64_t at)
{
    r->meta.truncated = true;
    r->meta.events_cut = r->in_events;
    r->meta.truncated_at = at;
    r->st = S_DONE;
}

/* End of input reached with the document unfinished (or finished). */
static int at_eof(tpa_reader *r, tpa_error *err)
{
    if (r->st == S_END && r->meta.object_form && !r->saw_events) {
        fail_plain(r, err, TPA_ERR_FORMAT, "a JSON object without a traceEvents array is not a trace "
                   "(expected a Chrome trace: {\"traceEvents\": [...]} or [...])");
        r->st = S_DONE;
        return -1;
    }
    if (r->st == S_END && !r->meta.object_form && !r->rows && !r->with_ph && (r->meta.events || r->meta.non_objects)) {
        char msg[200];
        snprintf(msg, sizeof msg, "a JSON array of %llu value(s), none a trace event (an object with \"ph\"), "
                 "is not a trace (expected a Chrome trace: {\"traceEvents\": [...]} or [...])",
                 (unsigned long long)(r->meta.events + r->meta.non_objects));
        fail_plain(r, err, TPA_ERR_FORMAT, msg);
        r->st = S_DONE;
        return -1;
    }
    if (r->st == S_END || r->st == S_DONE) { r->st = S_DONE; return 0; }
    if (r->st == S_START && r->gz_truncated) {
        fail_plain(r, err, TPA_ERR_GZIP, "truncated gzip: the compressed stream ends before any data");
        r->st = S_DONE;
        return -1;
    }
    if (r->st == S_START) {
        fail_plain(r, err, TPA_ERR_EMPTY, "empty input (no JSON document)");
        r->st = S_DONE;
        return -1;
    }
    mark_truncated(r, r->buf_off + r->len);
    return 0;
}

/* ---- -j N: a window of traceEvents parsed by several threads ----------------- */

static bool in_events_array(const tpa_reader *r)
{
    return r->st == S_ARR_FIRST || r->st == S_ARR_ELEM || r->st == S_ARR_NEXT;
}

/* Reads ahead until the window holds a batch's worth (or the input ends).
 * A failed read is kept for when the sequential reader gets there, so the
 * events before it are still handed out. */
static void fill_window(tpa_reader *r)
{
    size_t want = tpa_batch_window(r->batch);
    if (r->cap < want) {
        char *nb = realloc(r->buf, want);
        if (!nb) return;
        r->buf = nb;
        r->cap = want;
    }
    while (!r->eof && !r->has_read_err && r->len - r->pos < want)
        if (refill(r, &r->read_err) < 0) r->has_read_err = true;
}

static int range_state(int st)
{
    return st == S_ARR_FIRST ? TPA_RS_FIRST : st == S_ARR_ELEM ? TPA_RS_ELEM : TPA_RS_NEXT;
}

static void end_batch(tpa_reader *r)
{
    int st;
    const char *p = tpa_batch_resume(r->batch, &st);
    r->meta.non_objects += tpa_batch_non_objects(r->batch);
    r->pos = (size_t)(p - r->buf);
    r->st = st == TPA_RS_FIRST ? S_ARR_FIRST : st == TPA_RS_ELEM ? S_ARR_ELEM : S_ARR_NEXT;
    note_good_end(r);
    r->batch_live = false;
}

/* While the batch just parsed is handed out, the next window - the bytes
 * after the batch's proven end, then fresh input - is parsed in the
 * background (only when the batch proved something: otherwise the reader
 * goes on alone from there). */
static void start_ahead(tpa_reader *r)
{
    int st;
    const char *p = tpa_batch_resume(r->batch, &st);
    if (r->buf_off + (uint64_t)(p - r->buf) == r->batch_tried_at || r->eof || r->has_read_err)
        return;
    size_t tail = r->len - (size_t)(p - r->buf), want = tpa_batch_window(r->batch);
    if (r->ahead_cap < tail + want) {
        char *nb = realloc(r->ahead_buf, tail + want);
        if (!nb) return;
        r->ahead_buf = nb;
        r->ahead_cap = tail + want;
    }
    if (!r->ahead && !(r->ahead = tpa_batch_new(r->jobs))) return;
    memcpy(r->ahead_buf, p, tail);
    r->ahead_off = r->buf_off + (uint64_t)(p - r->buf);
    r->ahead_len = tail;
    while (r->ahead_len < tail + want) {
        long got = read_some(r, r->ahead_buf + r->ahead_len, r->ahead_cap - r->ahead_len, &r->read_err);
        if (got < 0) { r->has_read_err = true; break; }
        if (got == 0) { r->eof = true; break; }
        r->ahead_len += (size_t)got;
        note_bytes_read(r, r->ahead_off + r->ahead_len);
    }
    if (r->ahead_len == tail) return;  /* nothing new: the window keeps its tail */
    tpa_batch_start(r->ahead, r->ahead_buf, r->ahead_buf, st, r->ahead_buf + r->ahead_len);
    r->ahead_live = true;
}

/* tpa_reader_keep_last: the used-up window (batch b, text buf) joins the
 * kept ones; the oldest of them, once there are r->keep, is parsed into
 * next (none: a new one is made). Every kept window handed out events,
 * each at an earlier call than the next kept one's. */
static void keep_window(tpa_reader *r, tpa_batch *b, char *buf, size_t cap)
{
    r->ahead = NULL;
    r->ahead_buf = NULL;
    r->ahead_cap = 0;
    if (r->n_kept == r->keep) {
        struct kept_window *old = &r->kept[r->kept_first];
        r->ahead = old->batch;
        r->ahead_buf = old->buf;
        r->ahead_cap = old->cap;
        r->kept_first = (r->kept_first + 1) % TPA_READER_MAX_KEEP;
        r->n_kept--;
    }
    r->kept[(r->kept_first + r->n_kept++) % TPA_READER_MAX_KEEP] = (struct kept_window){ b, buf, cap };
}

/* The batch is used up and end_batch left the reader at its proven end,
 * where the window parsed ahead starts: that window becomes the reader's. */
static void switch_to_ahead(tpa_reader *r)
{
    tpa_batch_wait(r->ahead);
    char *buf = r->buf;
    size_t cap = r->cap;
    tpa_batch *b = r->batch;
    r->buf = r->ahead_buf;
    r->cap = r->ahead_cap;
    r->batch = r->ahead;
    if (r->keep && r->batch_gave) {
        keep_window(r, b, buf, cap);
    } else {  /* nobody reads the used-up window: it is parsed into next */
        r->ahead_buf = buf;
        r->ahead_cap = cap;
        r->ahead = b;
    }
    r->buf_off = r->ahead_off;
    r->pos = 0;
    r->len = r->ahead_len;
    r->ahead_live = false;
    r->batch_live = true;
    r->batch_gave = false;
    r->batch_tried_at = r->buf_off;
    start_ahead(r);
}

/* The reader's bookkeeping for n events just taken from the batch, in
 * order (evs updated in place: device pids, input offsets). */
static void took_from_batch(tpa_reader *r, tpa_event *evs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        note_device_pid(r, &evs[i]);
        evs[i].offset = r->buf_off + (uint64_t)(evs[i].raw.p - r->buf);
        r->with_ph += evs[i].ph != 0;
    }
    r->meta.events += n;
    r->batch_gave = true;
    r->meta.good_end = evs[n - 1].offset + evs[n - 1].raw.n;
    memcpy(r->meta.close, r->meta.object_form ? "]}" : "]", r->meta.object_form ? 3 : 2);
}

/* 1: a batch is live and has events left; 0: read on sequentially from
 * r->pos. Starts a batch, or moves to the one parsed ahead, as needed. */
static int ensure_batch(tpa_reader *r)
{
    for (;;) {
        if (!r->batch_live) {
            if (r->buf_off + r->pos == r->batch_tried_at) return 0;
            if (!r->batch && !(r->batch = tpa_batch_new(r->jobs))) { r->jobs = 1; return 0; }
            release_last(r);  /* the window moves and the batch is parsed over */
            fill_window(r);
            tpa_batch_parse(r->batch, r->buf, r->buf + r->pos, range_state(r->st), r->buf + r->len);
            r->batch_tried_at = r->buf_off + r->pos;
            r->batch_live = true;
            r->batch_gave = false;
            start_ahead(r);
        }
        if (tpa_batch_has_next(r->batch)) return 1;
        end_batch(r);
        if (r->ahead_live) switch_to_ahead(r);
        else if (r->buf_off + r->pos == r->batch_tried_at) return 0;
    }
}

/* 1: *ev filled from a batch; 0: read on sequentially from r->pos. */
static int batch_next(tpa_reader *r, tpa_event *ev)
{
    if (!ensure_batch(r)) return 0;
    *ev = *tpa_batch_next(r->batch);
    took_from_batch(r, ev, 1);
    return 1;
}

int tpa_reader_next(tpa_reader *r, tpa_event *ev, tpa_error *err)
{
    for (;;) {
        if (r->st == S_DONE)
            return 0;
        if (r->jobs > 1 && in_events_array(r) && batch_next(r, ev))
            return 1;
        bool got = false;
        tpa_scanerr e = {0};
        int rc = step(r, ev, &got, &e);
        if (rc == SC_OK) {
            if (got) return 1;
            continue;
        }
        if (rc == SC_ERR) {
            if (r->lenient && r->in_events) {  /* `fix`: keep what came before */
                fail_at(r, err, &e);  /* the caller decides: garbage after a cut, or a damaged file */
                mark_truncated(r, r->buf_off + (uint64_t)((e.at ? e.at : r->buf + r->pos) - r->buf));
                r->meta.cut_by_error = true;
                return 0;
            }
            fail_at(r, err, &e);
            r->st = S_DONE;
            return -1;
        }
        if (r->eof) {
            if (r->gz_truncated || r->st != S_DONE)
                return at_eof(r, err);
            return 0;
        }
        if (r->has_read_err) {  /* met earlier by a read ahead */
            if (err) *err = r->read_err;
            r->st = S_DONE;
            return -1;
        }
        int f = refill(r, err);
        if (f < 0) { r->st = S_DONE; return -1; }
    }
}

/* A run of the live batch's events, updated in place; else one event from
 * the sequential reader. */
long tpa_reader_next_block(tpa_reader *r, const tpa_event **evs, size_t max, tpa_error *err)
{
    if (max == 0) return 0;
    if (r->st != S_DONE && r->jobs > 1 && in_events_array(r) && ensure_batch(r)) {
        size_t n;
        tpa_event *run = tpa_batch_next_run(r->batch, max, &n);
        took_from_batch(r, run, n);
        *evs = run;
        return (long)n;
    }
    release_last(r);  /* the sequential reader moves its window and reuses single */
    int rc = tpa_reader_next(r, &r->single, err);
    *evs = &r->single;
    return rc;
}

int tpa_reader_drain(tpa_reader *r, tpa_error *err)
{
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, err)) > 0) {}
    return rc;
}
