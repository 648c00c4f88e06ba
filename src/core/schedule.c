/* Schedule phases (see schedule.h). */
#include "core/schedule.h"

void tpi_schedule_from_settings(tpi_schedule *sc, const tpi_settings *s)
{
    sc->skip_first = s->skip_first > 0 ? s->skip_first : 0;
    sc->wait = s->wait > 0 ? s->wait : 0;
    sc->warmup = s->warmup > 0 ? s->warmup : 0;
    sc->active = s->active > 0 ? s->active : 0;
    sc->repeat = s->repeat > 0 ? s->repeat : 0;
    sc->enabled = s->trace && sc->active > 0;
}

tpi_phase tpi_schedule_phase(const tpi_schedule *sc, uint64_t k, int64_t *cycle)
{
    if (cycle)
        *cycle = -1;
    if (!sc->enabled)
        return TPI_PHASE_SKIP;
    if (k < (uint64_t)sc->skip_first)
        return TPI_PHASE_SKIP;
    uint64_t j = k - (uint64_t)sc->skip_first;
    uint64_t n = (uint64_t)(sc->wait + sc->warmup + sc->active);
    uint64_t c = j / n, m = j % n;
    if (sc->repeat > 0 && c >= (uint64_t)sc->repeat)
        return TPI_PHASE_DONE;
    if (cycle)
        *cycle = (int64_t)c;
    if (m < (uint64_t)sc->wait)
        return TPI_PHASE_WAIT;
    if (m < (uint64_t)(sc->wait + sc->warmup))
        return TPI_PHASE_WARMUP;
    return TPI_PHASE_ACTIVE;
}

int tpi_schedule_last_active(const tpi_schedule *sc, uint64_t k)
{
    if (tpi_schedule_phase(sc, k, 0) != TPI_PHASE_ACTIVE)
        return 0;
    uint64_t n = (uint64_t)(sc->wait + sc->warmup + sc->active);
    return (k - (uint64_t)sc->skip_first) % n == n - 1;
}
