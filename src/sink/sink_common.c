/* Helpers shared by every sink. */
#include <stdio.h>
#include <string.h>

#include "sink/sink.h"

void tpi_sink_fail(tpi_sink *k, const char *what, const char *path, int errnum)
{
    k->io_errors++;
    if (k->failed)
        return;
    k->failed = 1;
    fprintf(stderr, "trainprof: warning: %s sink stopped: %s '%s': %s (training goes on)\n",
            k->ops && k->ops->name ? k->ops->name : "a", what, path ? path : "",
            errnum ? strerror(errnum) : "error");
}
