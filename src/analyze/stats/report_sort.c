/* report_sort.c - the report's operators in table order (host first, then
 * each device, then async pairs), by a key within each table. */
#include "analyze/stats/stats.h"

#include <stdlib.h>
#include <string.h>

static int64_t sort_value(const tpa_op *o, const char *key)
{
    if (!strcmp(key, "total")) return o->total_ns;
    if (!strcmp(key, "calls") || !strcmp(key, "count")) return (int64_t)o->count;
    if (!strcmp(key, "avg")) return o->count ? o->total_ns / (int64_t)o->count : 0;
    if (!strcmp(key, "min")) return o->min_ns;
    if (!strcmp(key, "max")) return o->max_ns;
    return o->self_ns;
}

/* qsort_r: sessions closing at once in several threads each sort (report.html) */
static int op_cmp(const void *a, const void *b, void *key_arg)
{
    const tpa_op *x = a, *y = b;
    const char *key = key_arg;
    if (x->table != y->table) return x->table < y->table ? -1 : 1;
    if (strcmp(key, "name") != 0) {
        int64_t vx = sort_value(x, key), vy = sort_value(y, key);
        if (vx != vy) return vx > vy ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

bool tpa_sort_key_valid(const char *key)
{
    static const char *const keys[] = { "self", "total", "calls", "count", "avg", "min", "max", "name" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(key, keys[i])) return true;
    return false;
}

void tpa_sort_ops(tpa_report *rep, const char *sort)
{
    const char *key = sort ? sort : "self";
    if (rep->n_ops) qsort_r(rep->ops, rep->n_ops, sizeof *rep->ops, op_cmp, (void *)key);
}
