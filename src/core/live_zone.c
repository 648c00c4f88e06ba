/*
 * live_zone.c - the collector's side of live.json (sink/live.c): where the
 * stepping thread is now. Its zones still open (as of the last drain, at
 * most 20 ms old) tell where a stalled run waits ("backward > all_reduce").
 * Called by the collector thread only, under the collector lock.
 */
#include <stdio.h>
#include <string.h>

#include "core/collector_internal.h"
#include "core/names.h"
#include "sink/live.h"

/* "outer > ... > inner" of the first stepping thread with an open zone,
 * cut to n bytes; the innermost zone's begin (session ns); 0 when none. */
static int open_path(const tpi_collector *c, char *out, size_t n, uint64_t *begin_ns)
{
    for (uint32_t i = 0; i < c->n_th; i++) {
        const tpi_thread_state *t = c->th[i];
        if (!t->is_step_thread || t->depth <= 0)
            continue;
        size_t used = 0;
        out[0] = '\0';
        for (int d = 0; d < t->depth && used + 1 < n; d++) {
            int w = snprintf(out + used, n - used, "%s%s", d ? " > " : "",
                             tpi_names_get(t->zs[d].name_id));
            used += w > 0 ? (size_t)w : 0;
        }
        *begin_ns = t->zs[t->depth - 1].begin_ns;
        return 1;
    }
    return 0;
}

int tpi_session_live_prepare(tp_session *s, uint64_t now_mono)
{
    if (!s->live || !s->col)
        return 0;
    char path[256];
    uint64_t begin = 0;
    int open = open_path(s->col, path, sizeof path, &begin);
    return tpi_live_prepare(s->live, now_mono, open ? path : NULL, begin);
}
