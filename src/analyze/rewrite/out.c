/* out.c - buffered output stream for slice/merge/fix: plain, or gzip when
 * the path ends in ".gz"; "-" is stdout. A file is written beside its path
 * and renamed into place by tpa_out_close only when every write, the flush
 * and the fsync succeeded (util/fileio.h, tpu_atomic_*); tpa_out_discard
 * drops it: a failure never leaves a cut file or destroys the old one.
 * Write errors are sticky and reported once by tpa_out_close. */
#include "analyze/trace/trace.h"
#include "analyze/rewrite/rewrite.h"
#include "util/fileio.h"
#include "util/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef TP_HAVE_ZLIB
#include <zlib.h>
#endif

#define OUT_BUF (1u << 20)

struct tpa_out {
    FILE *f;
#ifdef TP_HAVE_ZLIB
    gzFile gz;
#endif
    char *buf;
    size_t n;
    tpu_buf esc;    /* scratch for tpa_out_json_str */
    bool failed;
    int saved_errno;
    bool atomic;       /* a file: at holds its temporary */
    tpu_atomic_out at;
    char path[256];
};

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int tpa_out_not_input(const char *out, const char *const *in, size_t n, tpa_error *err)
{
    if (!out || strcmp(out, "-") == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(in[i], "-") == 0 || !tpu_same_file(in[i], out)) continue;
        if (err) {
            memset(err, 0, sizeof *err);
            snprintf(err->file, sizeof err->file, "%s", out);
            tpa_error_set(err, TPA_ERR_USAGE, "the output is the input %s (the same file): "
                          "writing it would destroy what is read; choose another output", in[i]);
        }
        return -1;
    }
    return 0;
}

tpa_out *tpa_out_open(const char *path, tpa_error *err)
{
    tpa_out *o = calloc(1, sizeof *o);
    if (!o || !(o->buf = malloc(OUT_BUF))) {
        free(o);
        tpa_error_set(err, TPA_ERR_IO, "out of memory");
        return NULL;
    }
    snprintf(o->path, sizeof o->path, "%s", path);
    int fd = -1;
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
    } else if (tpu_atomic_open(&o->at, path, NULL, 0) == 0) {
        o->atomic = true;
        fd = dup(o->at.fd);  /* the stream's own: at.fd stays open for the fsync */
    }
    if (fd >= 0 && ends_with(path, ".gz")) {
#ifdef TP_HAVE_ZLIB
        o->gz = gzdopen(fd, "wb6");
#endif
    } else if (fd >= 0) {
        o->f = fdopen(fd, "wb");
    }
    bool ok = o->f != NULL;
#ifdef TP_HAVE_ZLIB
    ok = ok || o->gz != NULL;
#endif
    if (!ok) {
        int e = errno;
        if (fd >= 0) close(fd);
        if (o->atomic) tpu_atomic_abort(&o->at);
        if (err) {
            memset(err, 0, sizeof *err);
            snprintf(err->file, sizeof err->file, "%s", path);
            tpa_error_set(err, TPA_ERR_IO, "cannot create output: %s", strerror(e));
        }
        free(o->buf);
        free(o);
        return NULL;
    }
    return o;
}

static void flush_buf(tpa_out *o)
{
    if (!o->n || o->failed) { o->n = 0; return; }
#ifdef TP_HAVE_ZLIB
    if (o->gz) {
        if (gzwrite(o->gz, o->buf, (unsigned)o->n) != (int)o->n) { o->failed = true; o->saved_errno = errno; }
        o->n = 0;
        return;
    }
#endif
    if (fwrite(o->buf, 1, o->n, o->f) != o->n) { o->failed = true; o->saved_errno = errno; }
    o->n = 0;
}

void tpa_out_write(tpa_out *o, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        if (o->n == OUT_BUF) flush_buf(o);
        size_t k = OUT_BUF - o->n < n ? OUT_BUF - o->n : n;
        memcpy(o->buf + o->n, s, k);
        o->n += k;
        s += k;
        n -= k;
    }
}

void tpa_out_puts(tpa_out *o, const char *s) { tpa_out_write(o, s, strlen(s)); }

void tpa_out_printf(tpa_out *o, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) tpa_out_write(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void tpa_out_json_str(tpa_out *o, const char *s, size_t n)
{
    tpu_buf_reset(&o->esc);
    tpu_buf_putc(&o->esc, '"');
    tpu_json_escape(&o->esc, s, n);
    tpu_buf_putc(&o->esc, '"');
    if (o->esc.oom) { /* never write a cut string: fail the output instead */
        o->failed = true;
        o->saved_errno = ENOMEM;
        return;
    }
    tpa_out_write(o, o->esc.data, o->esc.len);
}

/* Closes the stream; with commit, renames the file into place when nothing
 * failed, else removes it. */
static int out_end(tpa_out *o, bool commit, tpa_error *err)
{
    if (!o) return 0;
    if (commit) flush_buf(o);
    bool failed = o->failed;
    errno = 0;
#ifdef TP_HAVE_ZLIB
    if (o->gz && gzclose(o->gz) != Z_OK) failed = true;
#endif
    if (o->f && o->f != stdout && fclose(o->f) != 0) failed = true;
    if (o->f == stdout && fflush(stdout) != 0) failed = true;
    if (failed && !o->saved_errno) o->saved_errno = errno;
    if (o->atomic && (!commit || failed)) tpu_atomic_abort(&o->at);
    else if (o->atomic && tpu_atomic_commit(&o->at, NULL, 0) != 0) { failed = true; o->saved_errno = errno; }
    if (!commit) failed = false;
    if (failed && err) {
        memset(err, 0, sizeof *err);
        snprintf(err->file, sizeof err->file, "%s", o->path);
        tpa_error_set(err, TPA_ERR_IO, "write failed: %s", strerror(o->saved_errno ? o->saved_errno : EIO));
    }
    tpu_buf_free(&o->esc);
    free(o->buf);
    free(o);
    return failed ? -1 : 0;
}

int tpa_out_close(tpa_out *o, tpa_error *err) { return out_end(o, true, err); }

void tpa_out_discard(tpa_out *o) { out_end(o, false, NULL); }
