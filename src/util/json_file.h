/*
 * json_file.h - a JSON file that is valid at every moment: prefix, items,
 * suffix. Items are buffered and appended by one pwrite that overwrites the
 * old suffix with "<items><suffix>", so a crash between flushes leaves a
 * complete document of what was flushed, and each flush costs only the new
 * items (no rewrite of the file). Used by memory_profile.json and by the
 * files of `trainprof run`.
 *
 * Layout: prefix, then "\n" before the first item and ",\n" before each later
 * one, then suffix. With prefix "[" and suffix "\n]\n" an empty file reads
 * "[\n]\n" and one item "[\n{...}\n]\n".
 *
 * Nothing is printed here: a failing call returns -1 with the errno in
 * f->err, the file keeps its last valid content and nothing more is written.
 */
#ifndef TP_UTIL_JSON_FILE_H
#define TP_UTIL_JSON_FILE_H

#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"

typedef struct tpu_json_file {
    char path[1200];
    int fd;
    off_t tail;           /* where the suffix starts */
    const char *suffix;   /* not copied: a string literal */
    uint64_t items, pending_items;
    tpu_buf pending;
    int failed;           /* a call failed: nothing more is written */
    int err;              /* errno of that failure */
} tpu_json_file;

/* Creates dir/name holding prefix + suffix. */
int tpu_json_file_open(tpu_json_file *f, const char *dir, const char *name, const char *prefix,
                       const char *suffix);
/* The buffer to append the next item's JSON text to (its separator is
 * already there). After a failure only the current item is kept, so memory
 * stays bounded however long the run. */
tpu_buf *tpu_json_file_item(tpu_json_file *f);
/* Appends the pending items. 0, or -1 when this call failed. */
int tpu_json_file_flush(tpu_json_file *f);
/* Flushes, fsyncs when sync != 0, closes, frees. 0, or -1 when a write or
 * the sync failed in this call. Safe after a failed open. */
int tpu_json_file_close(tpu_json_file *f, int sync);

#endif
