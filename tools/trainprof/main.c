/* trainprof - command-line front end: dispatches to one cmd_*.c per subcommand.
 * Uses only the public header and the analyzer layer. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "trainprof.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command COMMANDS[] = {
    {"report", cmd_report, "per-operation table of a trace (like key_averages().table())"},
    {"steps", cmd_steps, "one row per step with a time breakdown"},
    {"analyze", cmd_analyze, "where the step time goes and what to fix first (ranked findings)"},
    {"diff", cmd_diff, "compare two traces; --fail-if-slower PCT gates CI"},
    {"slice", cmd_slice, "cut a large trace down by steps, time, duration or category"},
    {"merge", cmd_merge, "several ranks on one timeline"},
    {"ranks", cmd_ranks, "the ranks of a job: straggler, waits, and who a hung job waits for"},
    {"combine", cmd_combine, "reduce rank summaries into the cross-rank analysis of a job"},
    {"fix", cmd_fix, "make a trace cut short by a crash loadable again"},
    {"config", cmd_config, "print the effective configuration [--explain] [FILE] [-- FLAGS...]"},
    {"top", cmd_top, "watch running jobs live, per rank: top [--once|--json] [PATH]"},
    {"capture", cmd_capture, "ask running sessions for a capture of their last steps: capture RUN_DIR|JOB_DIR"},
    {"run", cmd_run, "monitor any command's memory and CPU: run [--interval 100ms] [-o DIR] -- CMD..."},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: trainprof <command> [options] ...\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(out, "\n'trainprof <command> --help' (or 'trainprof help <command>') describes each command.\n"
                 "Exit status: 0 ok, 1 findings (e.g. diff gate), 2 bad input.\n");
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, COMMANDS[i].name) == 0)
            return &COMMANDS[i];
    return NULL;
}

/* `trainprof help COMMAND`: the command's own --help. */
static int help_of(const char *name)
{
    const command *c = find_command(name);
    if (!c) {
        fprintf(stderr, "trainprof: help: unknown command '%s'\n\n", name);
        usage(stderr);
        return 2;
    }
    char *args[] = {(char *)c->name, (char *)"--help", NULL};
    return c->run(2, args);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 && argc > 2)
        return help_of(argv[2]);
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("trainprof %s\n", tp_version());
        return 0;
    }
    const command *c = find_command(name);
    if (c)
        return c->run(argc - 1, argv + 1);
    fprintf(stderr, "trainprof: unknown command '%s'\n\n", name);
    usage(stderr);
    return 2;
}
