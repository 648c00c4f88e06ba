/*
 * run_out.h - output files of `trainprof run` that are valid JSON at every
 * moment: prefix, items joined by ",\n", suffix. New items are appended by
 * one pwrite that overwrites the old suffix, so a crash (of trainprof or the
 * machine between flushes) leaves a complete file of what was flushed.
 */
#ifndef TP_CLI_RUN_OUT_H
#define TP_CLI_RUN_OUT_H

#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"

typedef struct run_file {
    char path[1200];
    int fd;
    off_t tail;           /* where the suffix starts */
    const char *suffix;
    uint64_t items, pending_items;
    tpu_buf pending;
    int failed;
} run_file;

/* Creates dir/name holding prefix + suffix. -1 with a message on stderr. */
int run_file_open(run_file *f, const char *dir, const char *name, const char *prefix,
                  const char *suffix);
/* Starts a new item: returns the buffer to write its JSON text into. */
tpu_buf *run_file_item(run_file *f);
/* Appends the pending items to the file (one write). */
void run_file_flush(run_file *f);
void run_file_close(run_file *f);

#endif
