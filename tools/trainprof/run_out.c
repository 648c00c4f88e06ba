/* run_out.c - see run_out.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "run_out.h"
#include "util/fileio.h"

int run_file_open(run_file *f, const char *dir, const char *name, const char *prefix,
                  const char *suffix)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->suffix = suffix;
    if (tpu_path_join(f->path, sizeof f->path, dir, name) != 0) {
        fprintf(stderr, "trainprof run: output path too long: %s/%s\n", dir, name);
        f->failed = 1;
        return -1;
    }
    tpu_buf_puts(&f->pending, prefix);
    tpu_buf_puts(&f->pending, suffix);
    f->fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0 || tpu_write_all(f->fd, f->pending.data, f->pending.len) != 0) {
        fprintf(stderr, "trainprof run: cannot write %s: %s\n", f->path, strerror(errno));
        f->failed = 1;
        tpu_buf_free(&f->pending);
        return -1;
    }
    f->tail = (off_t)strlen(prefix);
    tpu_buf_reset(&f->pending);
    return 0;
}

tpu_buf *run_file_item(run_file *f)
{
    if (f->failed) { /* never written: keep one item at a time, not the whole run */
        tpu_buf_reset(&f->pending);
        return &f->pending;
    }
    if (f->items || f->pending_items)
        tpu_buf_puts(&f->pending, ",\n");
    f->pending_items++;
    return &f->pending;
}

void run_file_flush(run_file *f)
{
    if (f->failed || !f->pending_items)
        return;
    size_t slen = strlen(f->suffix);
    tpu_buf_puts(&f->pending, f->suffix);
    ssize_t w = f->pending.oom ? -1
              : pwrite(f->fd, f->pending.data, f->pending.len, f->tail);
    if (w != (ssize_t)f->pending.len) {
        int e = w < 0 ? errno : ENOSPC;
        if (pwrite(f->fd, f->suffix, slen, f->tail) == (ssize_t)slen)
            (void)ftruncate(f->fd, f->tail + (off_t)slen);
        fprintf(stderr, "trainprof run: warning: cannot write %s: %s (stopped writing it)\n",
                f->path, f->pending.oom ? "out of memory" : strerror(e));
        f->failed = 1;
        return;
    }
    f->tail += (off_t)(f->pending.len - slen);
    f->items += f->pending_items;
    f->pending_items = 0;
    tpu_buf_reset(&f->pending);
}

void run_file_close(run_file *f)
{
    run_file_flush(f);
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    tpu_buf_free(&f->pending);
}
