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
