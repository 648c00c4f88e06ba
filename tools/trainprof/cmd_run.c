/* PLACEHOLDER: replaced by the owner of this subcommand. */
#include <stdio.h>

#include "commands.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "trainprof %s: not implemented yet\n", argv[0]);
    return 2;
}
