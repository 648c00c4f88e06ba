/*
 * fileio.h - files and directories, with errors as text for tp_error.
 * All functions return 0 on success and -1 on failure with errno kept and
 * (when errbuf is not NULL) a message naming the path and the reason.
 */
#ifndef TP_UTIL_FILEIO_H
#define TP_UTIL_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p with mode 0755; an existing directory is fine. */
int tpu_mkdir_p(const char *path, char *errbuf, size_t errlen);

/* Writes all n bytes, retrying on EINTR and short writes. */
int tpu_write_all(int fd, const void *data, size_t n);

/* Writes data to path atomically: path.tmp.<pid>, fsync, rename. A reader
 * sees either the old file or the whole new one, never a partial one. */
int tpu_write_file_atomic(const char *path, const void *data, size_t n, char *errbuf, size_t errlen);

/* 1 when a and b name the same existing file (device and inode, symlinks
 * followed): writing to one would destroy the other. 0 otherwise, also when
 * either cannot be stat'ed (a file that does not exist yet is no input). */
int tpu_same_file(const char *a, const char *b);

/* An output written beside its final path and renamed into place by
 * tpu_atomic_commit: a reader (or the user, after a failure) sees the old
 * file or the whole new one, never a cut one. A path that is a symlink is
 * resolved so the link keeps pointing at the new file. A path that exists
 * and is not a regular file (/dev/null, /dev/full, a FIFO) is written in
 * place: nothing could be renamed over it. */
typedef struct tpu_atomic_out {
    int fd;          /* write here */
    int direct;      /* written in place, no rename */
    char path[4096]; /* the final path (symlinks resolved) */
    char tmp[4200];  /* path.tmp.<pid> */
} tpu_atomic_out;

int tpu_atomic_open(tpu_atomic_out *a, const char *path, char *errbuf, size_t errlen);
/* fsync, close, rename into place. 0, or -1 (errno kept) after removing the
 * temporary file: the old file at path, if any, is untouched. */
int tpu_atomic_commit(tpu_atomic_out *a, char *errbuf, size_t errlen);
/* Closes and removes the temporary file; the old file stays. */
void tpu_atomic_abort(tpu_atomic_out *a);

/* Reads a whole file into a malloc'd, NUL-terminated buffer. */
int tpu_read_file(const char *path, char **data, size_t *len, char *errbuf, size_t errlen);

/* Joins dir and name with one '/'. Returns -1 when out is too small. */
int tpu_path_join(char *out, size_t outlen, const char *dir, const char *name);

/* Host name, sanitized for file names ("unknown-host" when unavailable). */
void tpu_hostname(char *out, size_t outlen);

/* Replaces anything but [A-Za-z0-9._-] by '_' and refuses "." / ".." so the
 * result is a single, safe path component. */
void tpu_sanitize_component(char *s);

#endif
