#include <stdio.h>
#include <string.h>

#include <trainprof.h>

int main(void)
{
    printf("trainprof %s\n", tp_version());
    return strcmp(tp_version(), TRAINPROF_VERSION_STRING) != 0;
}
