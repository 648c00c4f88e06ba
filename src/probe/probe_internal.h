/*
 * probe_internal.h - pieces shared inside src/probe (not part of probe.h):
 * /proc readers with an overridable root (tests point it at a fake or an
 * unreadable directory), the NVML and CUDA runtime loaders.
 */
#ifndef TP_PROBE_INTERNAL_H
#define TP_PROBE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "probe/probe.h"

/* --- proc.c ---------------------------------------------------------------- */

/* Root of the proc file system ("/proc" unless set; NULL restores it). For
 * tests; not thread-safe against concurrent samples. */
void tpi_proc_set_root(const char *root);
const char *tpi_proc_root(void);

/* Reads a small file under the proc root ("self/status") into buf (NUL
 * terminated). Returns the length, or -1 with errno set. */
long tpi_proc_read(const char *rel, char *buf, size_t cap);
/* The same in two halves, for a file kept open and read again (pread from
 * offset 0 regenerates a /proc file): open under the root (O_CLOEXEC), read. */
int tpi_proc_open(const char *rel);
long tpi_proc_pread(int fd, char *buf, size_t cap);

/* The fields of /proc/<pid>/stat we use. */
typedef struct tpi_proc_stat {
    int pid, ppid;
    char state;
    uint64_t utime_ticks, stime_ticks;
    int threads;
    uint64_t starttime_ticks;
    uint64_t rss_pages;
} tpi_proc_stat;

/* Parses the text of a stat file (the comm field may hold spaces and ')').
 * Returns 0, or -1 when malformed. */
int tpi_proc_parse_stat(const char *text, tpi_proc_stat *out);
/* Reads /proc/<pid>/stat (pid 0 = self). */
int tpi_proc_read_stat(int pid, tpi_proc_stat *out);

/* VmRSS, VmHWM (bytes) and Threads from a status text; 0 when all found. */
int tpi_proc_parse_status(const char *text, uint64_t *rss, uint64_t *hwm, int *threads);

/* Value in bytes of a "Key:   123 kB" line of a status/meminfo text. */
int tpi_proc_kb_field(const char *text, const char *key, uint64_t *bytes);

/* --- system.c -------------------------------------------------------------- */

/* MemTotal and MemAvailable of /proc/meminfo (bytes); used percent. */
int tpi_system_read(uint64_t *total, uint64_t *available, double *used_percent);

/* --- nvml.c ---------------------------------------------------------------- */

typedef struct tpi_nvml tpi_nvml;
/* Loads NVML (TRAINPROF_NVML_LIB or libnvidia-ml.so.1) and initializes it.
 * NULL with a one-line reason in why when there is no usable NVML. */
tpi_nvml *tpi_nvml_open(char *why, size_t whylen);
/* Fills up to max devices ("cuda:<index>"): used as allocated and reserved,
 * total, utilization, and memory used by the processes in pids (when the
 * driver tells). Returns how many, or -1 with why filled. */
int tpi_nvml_sample(tpi_nvml *n, const int *pids, int n_pids, tpi_device_sample *out,
                    int max, char *why, size_t whylen);
void tpi_nvml_close(tpi_nvml *n);

/* --- cudart.c -------------------------------------------------------------- */

typedef struct tpi_cudart tpi_cudart;
/* Uses the CUDA runtime only when the program already loaded it (or
 * TRAINPROF_CUDART_LIB names one): trainprof never creates CUDA contexts in a
 * program that does not use CUDA. NULL with a reason otherwise. */
/* The CUDA runtime the program already loaded (dlopen RTLD_NOLOAD), or the
 * one TRAINPROF_CUDART_LIB names; NULL with why filled when there is none.
 * The caller dlclose()s the handle. */
void *tpi_cudart_find_runtime(char *why, size_t whylen);
tpi_cudart *tpi_cudart_open(char *why, size_t whylen);
int tpi_cudart_sample(tpi_cudart *c, tpi_device_sample *out, int max, char *why, size_t whylen);
void tpi_cudart_close(tpi_cudart *c);

/* --- probes.c -------------------------------------------------------------- */

/* Checks one callback entry; returns NULL when fine or the reason. */
const char *tpi_device_memory_check(const tp_device_memory *d);

#endif
