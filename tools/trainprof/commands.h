/* commands.h - one function per `trainprof` subcommand (cmd_<name>.c).
 * Each gets argv[0] = the subcommand name and returns the process exit
 * status: 0 ok, 1 findings (e.g. a diff gate tripped), 2 bad input/usage. */
#ifndef TP_CLI_COMMANDS_H
#define TP_CLI_COMMANDS_H

int cmd_report(int argc, char **argv);
int cmd_steps(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_slice(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_fix(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_top(int argc, char **argv); /* cmd_top.c: live view (issue 30) */
int cmd_capture(int argc, char **argv); /* flight-recorder captures of live runs */

/* multi-rank jobs (cmd_ranks.c, cmd_combine.c) */
#include <stdbool.h>
/* True when the command line names a directory or a ranks option: the
 * analyze/steps/report commands then hand over to cmd_ranks. */
bool cli_ranks_wanted(int argc, char **argv);
/* A directory holding one run (its profiler_traces/, or one trace file):
 * analyze/steps/report read it as that run, not as a job. */
bool cli_is_run_dir(const char *dir);
int cmd_ranks(int argc, char **argv);
int cmd_combine(int argc, char **argv);
int cmd_ranks_diff(int argc, char **argv); /* diff of two job directories */
/* Every trace file of every rank of a job (or rank) directory, for merge;
 * the caller frees each path and the array. 0, or CLI_BAD_INPUT after
 * reporting. */
#include <stddef.h>
int cli_job_trace_files(const char *dir, char ***files, size_t *n);
/* When no rank could be read: prints each rank's reason and one line
 * saying so on stderr (no empty table on stdout) and returns CLI_BAD_INPUT;
 * else CLI_OK. */
struct tpa_ranks;
int cli_no_ranks(const char *cmd, const struct tpa_ranks *r, const char *what);
/* A run directory's trace files (at least one, or CLI_BAD_INPUT after
 * saying what was expected), and its last one (the caller frees it). */
int cli_run_traces(const char *dir, char ***files, size_t *n);
int cli_run_last_trace(const char *cmd, const char *dir, char **file);

#endif
