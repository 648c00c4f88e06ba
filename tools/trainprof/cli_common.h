/* cli_common.h - option parsing and error reporting shared by the analyzer
 * subcommands (report, steps, diff, slice, merge, fix). */
#ifndef TP_CLI_COMMON_H
#define TP_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/trace/trace.h"

enum { CLI_OK = 0, CLI_FINDINGS = 1, CLI_BAD_INPUT = 2 };

/* Per-command setup: progress on stderr when it is a terminal, and the
 * reader's threads (-j) at their default, cli_default_jobs(). */
void cli_init(void);
/* The cores this process may run on (its CPU affinity: taskset, cpuset,
 * SLURM's binding; else the cores online), 1..TPA_MAX_JOBS: the default of -j. */
long cli_default_jobs(void);
/* "-j N" / "--jobs N" at argv[*i]: sets the reader's threads (tpa_set_jobs)
 * and *jobs when not NULL. CLI_ARG_NONE, CLI_ARG_USED or CLI_ARG_ERROR
 * (reported). */
int cli_jobs_opt(int argc, char **argv, int *i, long *jobs);
bool cli_is_help(const char *arg);
/* Matches "--name VALUE" or "--name=VALUE"; advances *i past the value.
 * Returns true when argv[*i] is this option; *val is NULL when missing. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char **val);
/* Prints "trainprof CMD: message" and returns CLI_BAD_INPUT. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_fail_missing(const char *cmd, const char *opt);
/* Prints a reader/writer error and returns CLI_BAD_INPUT. */
int cli_error(const tpa_error *err);
bool cli_parse_size(const char *s, size_t *out);

/* The options every file subcommand shares, tried at argv[*i]: --help
 * (prints usage), --json, -j N (cli_jobs_opt), and -o/--output OUT when
 * out is not NULL.
 * CLI_ARG_NONE: not one of them; CLI_ARG_USED: consumed (go on);
 * CLI_ARG_HELP: usage printed (exit 0); CLI_ARG_ERROR: reported (exit 2). */
enum { CLI_ARG_NONE = 0, CLI_ARG_USED = 1, CLI_ARG_HELP = -1, CLI_ARG_ERROR = -2 };
int cli_common_arg(int argc, char **argv, int *i, const char *usage, bool *json, const char **out);
/* Maps a cli_common_arg result other than USED/NONE to the exit status. */
int cli_arg_exit(int k);
/* A positional argument: the single input file. 0, or CLI_BAD_INPUT after
 * reporting an unknown option or a second file. */
int cli_positional(const char *cmd, const char *arg, const char **in);
/* The whole command line of a one-file command: [--json] [--top N] FILE
 * (--top only when top is not NULL). 0 ok, -1 after --help, else CLI_BAD_INPUT. */
int cli_parse_one_file(int argc, char **argv, const char *usage, const char **file, bool *json,
                       size_t *top);
bool cli_parse_i64(const char *s, int64_t *out);
/* For commands that read their input more than once: when *path is "-",
 * copies stdin to a temporary file (removed at exit, shared by every "-")
 * and points *path at it. 0, or CLI_BAD_INPUT after reporting. */
int cli_stdin_to_file(const char **path);

#endif
