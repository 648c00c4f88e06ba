/* cli_common.h - option parsing and error reporting shared by the analyzer
 * subcommands (report, steps, diff, slice, merge, fix). */
#ifndef TP_CLI_COMMON_H
#define TP_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/analyze.h"

enum { CLI_OK = 0, CLI_FINDINGS = 1, CLI_BAD_INPUT = 2 };

/* Per-command setup: progress on stderr when it is a terminal. */
void cli_init(void);
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
bool cli_parse_i64(const char *s, int64_t *out);

#endif
