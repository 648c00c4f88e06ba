#include "util/json_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"

static int fail(tpu_json_file *f, int err)
{
    f->failed = 1;
    f->err = err;
    return -1;
}

int tpu_json_file_open(tpu_json_file *f, const char *dir, const char *name, const char *prefix,
                       const char *suffix)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->suffix = suffix;
    if (tpu_path_join(f->path, sizeof f->path, dir, name) != 0)
        return fail(f, ENAMETOOLONG);
    tpu_buf_puts(&f->pending, prefix);
    tpu_buf_puts(&f->pending, suffix);
    if (f->pending.oom)
        return fail(f, ENOMEM);
    f->fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0 || tpu_write_all(f->fd, f->pending.data, f->pending.len) != 0)
        return fail(f, errno);
    f->tail = (off_t)strlen(prefix);
    tpu_buf_reset(&f->pending);
    return 0;
}

tpu_buf *tpu_json_file_item(tpu_json_file *f)
{
    if (f->failed) {
        tpu_buf_reset(&f->pending);
        return &f->pending;
    }
    tpu_buf_puts(&f->pending, f->items || f->pending_items ? ",\n" : "\n");
    f->pending_items++;
    return &f->pending;
}

int tpu_json_file_flush(tpu_json_file *f)
{
    if (f->failed || !f->pending_items)
        return 0;
    size_t slen = strlen(f->suffix);
    tpu_buf_puts(&f->pending, f->suffix);
    if (f->pending.oom)
        return fail(f, ENOMEM);
    ssize_t w = pwrite(f->fd, f->pending.data, f->pending.len, f->tail);
    if (w != (ssize_t)f->pending.len) {
        int e = w < 0 ? errno : ENOSPC;
        /* a short write may have cut the old suffix: put it back */
        if (pwrite(f->fd, f->suffix, slen, f->tail) == (ssize_t)slen)
            (void)!ftruncate(f->fd, f->tail + (off_t)slen);
        return fail(f, e);
    }
    f->tail += (off_t)(f->pending.len - slen);
    f->items += f->pending_items;
    f->pending_items = 0;
    tpu_buf_reset(&f->pending);
    return 0;
}

int tpu_json_file_close(tpu_json_file *f, int sync)
{
    int rc = tpu_json_file_flush(f);
    if (rc == 0 && sync && f->fd >= 0 && !f->failed && fsync(f->fd) != 0 && errno != EINVAL)
        rc = fail(f, errno);
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    tpu_buf_free(&f->pending);
    return rc;
}
