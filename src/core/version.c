/* Library version and the caller-owned memory release function. */
#include <stdlib.h>

#include "trainprof.h"

const char *tp_version(void)
{
    return TRAINPROF_VERSION_STRING;
}

void tp_free(void *ptr)
{
    free(ptr);
}
