/* The zone loop compiled with -DTP_DISABLE (macros compiled out). */
#include "trainprof.h"

void bench_disabled_loop(tp_session *s, long n, volatile long *sink)
{
    for (long i = 0; i < n; i++) {
        TP_ZONE(s, "zone");
        *sink += i;
    }
}
