/* gunzip_whole.h - whole-file gzip inflate (libdeflate), see gunzip_whole.c. */
#ifndef TRAINPROF_ANALYZE_GUNZIP_WHOLE_H
#define TRAINPROF_ANALYZE_GUNZIP_WHOLE_H

#include <stdbool.h>
#include <stddef.h>

/* Compressed + decompressed bytes held at once, at most. */
#define TPA_GUNZIP_MAX_BYTES ((size_t)128 << 20)

/* A regular gzip file that fits: *out (malloc'd, caller frees) holds all of
 * it decompressed. false (nothing allocated): use the streaming reader. */
bool tpa_gunzip_whole(int fd, char **out, size_t *out_len);

#endif
