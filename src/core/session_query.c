/*
 * session_query.c - statistics read while the session runs
 * (tp_session_operations): the calling thread drains the buffers itself
 * under the collector lock, so the answer includes every zone ended before
 * the call.
 */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/collector_internal.h"

static int copy_totals(const tpi_collector *c, tp_op_stat **out, tp_error *err)
{
    if (c->n_totals == 0)
        return 0;
    tp_op_stat *a = malloc(c->n_totals * sizeof *a);
    if (!a) {
        if (err) {
            err->code = TP_ERR_NOMEM;
            strcpy(err->message, "out of memory");
        }
        return TP_ERR_NOMEM;
    }
    for (size_t i = 0; i < c->n_totals; i++) {
        const tpi_op_stat *o = &c->totals[i];
        a[i] = (tp_op_stat){o->name, o->count, o->total_s, o->self_s, o->mean_s,
                            o->min_s, o->max_s, o->p50_s, o->p90_s, o->p99_s};
    }
    *out = a;
    return (int)c->n_totals;
}

int tp_session_operations(tp_session *s, tp_op_stat **out, tp_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!out)
        return TP_ERR_INVALID;
    *out = NULL;
    /* a fork child's collector lock may be held by a thread that is gone */
    if (!s || s->dead || !s->col)
        return 0;
    pthread_mutex_lock(&s->col_lock);
    tpi_collector_samples(s->col);
    tpi_collector_drain(s->col, tpi_ticks());
    tpi_col_refresh_totals(s->col, 1);
    int n = copy_totals(s->col, out, err);
    pthread_mutex_unlock(&s->col_lock);
    return n;
}
