/* procstat.h - when a process started, to tell it from a later process
 * that reuses its pid (the flight recorder's index, `trainprof capture`,
 * `trainprof top`). */
#ifndef TRAINPROF_UTIL_PROCSTAT_H
#define TRAINPROF_UTIL_PROCSTAT_H

/* The start time of process pid (0: this process) in clock ticks since
 * boot (/proc/<pid>/stat field 22, sysconf(_SC_CLK_TCK) a second); 0 when
 * it cannot be read (no such process, no /proc). */
unsigned long long tpu_proc_start_ticks(int pid);

#endif
