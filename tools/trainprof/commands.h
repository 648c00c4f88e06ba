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

#endif
