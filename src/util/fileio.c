#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *errbuf, size_t errlen, const char *what, const char *path)
{
    int e = errno;
    if (errbuf && errlen)
        snprintf(errbuf, errlen, "%s '%s': %s", what, path, strerror(e));
    errno = e;
    return -1;
}

int tpu_mkdir_p(const char *path, char *errbuf, size_t errlen)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return fail(errbuf, errlen, "cannot create directory", path);
    }
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return fail(errbuf, errlen, "cannot create directory", tmp);
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return fail(errbuf, errlen, "cannot create directory", tmp);
    struct stat st;
    if (stat(tmp, &st) != 0)
        return fail(errbuf, errlen, "cannot stat", tmp);
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return fail(errbuf, errlen, "not a directory", tmp);
    }
    return 0;
}

int tpu_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {
            errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int tpu_write_file_atomic(const char *path, const void *data, size_t n, char *errbuf, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail(errbuf, errlen, "cannot create", tmp);
    if (tpu_write_all(fd, data, n) != 0 || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return fail(errbuf, errlen, "cannot write", path);
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return fail(errbuf, errlen, "cannot write", path);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return fail(errbuf, errlen, "cannot rename into", path);
    }
    return 0;
}

int tpu_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int tpu_atomic_open(tpu_atomic_out *a, const char *path, char *errbuf, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->fd = -1;
    struct stat st;
    char *real = NULL;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        real = realpath(path, NULL);  /* NULL for a dangling link: replace the link */
    int n = snprintf(a->path, sizeof a->path, "%s", real ? real : path);
    free(real);
    if (n < 0 || (size_t)n >= sizeof a->path) {
        errno = ENAMETOOLONG;
        return fail(errbuf, errlen, "cannot create", path);
    }
    if (stat(a->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        a->direct = 1;
        a->fd = open(a->path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        return a->fd < 0 ? fail(errbuf, errlen, "cannot open", a->path) : 0;
    }
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", a->path, (long)getpid());
    a->fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    return a->fd < 0 ? fail(errbuf, errlen, "cannot create", a->tmp) : 0;
}

int tpu_atomic_commit(tpu_atomic_out *a, char *errbuf, size_t errlen)
{
    /* EINVAL: a device or FIFO written in place cannot be synced; nothing is lost */
    int bad = fsync(a->fd) != 0 && !(a->direct && (errno == EINVAL || errno == EROFS));
    int e = errno;
    if (close(a->fd) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    a->fd = -1;
    if (!bad && !a->direct && rename(a->tmp, a->path) != 0) {
        e = errno;
        unlink(a->tmp);
        errno = e;
        return fail(errbuf, errlen, "cannot rename into", a->path);
    }
    if (bad) {
        if (!a->direct)
            unlink(a->tmp);
        errno = e;
        return fail(errbuf, errlen, "cannot write", a->path);
    }
    return 0;
}

void tpu_atomic_abort(tpu_atomic_out *a)
{
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    if (!a->direct && a->tmp[0])
        unlink(a->tmp);
}

int tpu_read_file(const char *path, char **data, size_t *len, char *errbuf, size_t errlen)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(errbuf, errlen, "cannot open", path);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf) {
        errno = ENOMEM;
        return fail(errbuf, errlen, "out of memory reading", path);
    }
    if (err) {
        free(buf);
        errno = EIO;
        return fail(errbuf, errlen, "cannot read", path);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

int tpu_path_join(char *out, size_t outlen, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    int n = snprintf(out, outlen, "%.*s/%s", (int)dl, dir, name);
    return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

void tpu_sanitize_component(char *s)
{
    for (char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (!ok)
            *p = '_';
    }
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || s[0] == '\0') {
        s[0] = '_';
        s[1] = '\0';
    }
}

void tpu_hostname(char *out, size_t outlen)
{
    if (outlen == 0)
        return;
    if (gethostname(out, outlen) != 0 || out[0] == '\0')
        snprintf(out, outlen, "unknown-host");
    out[outlen - 1] = '\0';
    tpu_sanitize_component(out);
}
