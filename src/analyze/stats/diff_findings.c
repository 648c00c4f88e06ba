/* diff_findings.c - which findings moved between two runs (`trainprof diff`):
 * the union of both diagnoses' findings, by how much their share of step
 * time changed. */
#include "analyze/stats/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static tpa_finding_move *move_for(tpa_diff *d, const tpa_finding *f)
{
    for (size_t i = 0; i < d->n_moves; i++)
        if (!strcmp(d->moves[i].id, f->id)) return &d->moves[i];
    if (d->n_moves == sizeof d->moves / sizeof d->moves[0]) return NULL;
    tpa_finding_move *m = &d->moves[d->n_moves++];
    memset(m, 0, sizeof *m);
    m->id = f->id;
    m->title = f->title;
    return m;
}

static int by_move(const void *x, const void *y)
{
    const tpa_finding_move *a = x, *b = y;
    double da = fabs(a->share_b - a->share_a), db = fabs(b->share_b - b->share_a);
    return da > db ? -1 : da < db;
}

void tpa_diff_findings(tpa_diff *d, const tpa_diagnosis *a, const tpa_diagnosis *b)
{
    d->n_moves = 0;
    for (size_t i = 0; i < a->n_findings; i++) {
        tpa_finding_move *m = move_for(d, &a->findings[i]);
        if (m) { m->in_a = true; m->share_a = a->findings[i].share; }
    }
    for (size_t i = 0; i < b->n_findings; i++) {
        tpa_finding_move *m = move_for(d, &b->findings[i]);
        if (m) { m->in_b = true; m->share_b = b->findings[i].share; }
    }
    if (d->n_moves) qsort(d->moves, d->n_moves, sizeof *d->moves, by_move);
}

const char *tpa_finding_move_verdict(const tpa_finding_move *m)
{
    if (!m->in_a) return "new";
    if (!m->in_b) return "gone";
    double delta = m->share_b - m->share_a;
    return delta >= 0.01 ? "worse" : delta <= -0.01 ? "better" : "same";
}
