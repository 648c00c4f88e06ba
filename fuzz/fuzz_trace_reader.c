/* fuzz_trace_reader.c - the streaming trace reader and event classifier on
 * arbitrary bytes. The first byte picks the read size (1..256 bytes, or
 * unlimited) so refills land everywhere; the reader must never crash,
 * leak, or hand out an event whose text lies outside its window. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/trace/trace.h"
#include "analyze/stats/stats.h"

/* Results are summed here so the compiler keeps every read. */
static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t max_read = data[0] == 0 ? 0 : (size_t)data[0];
    tpa_error err;
    tpa_reader *r = tpa_reader_open_mem(data + 1, size - 1, &err);
    if (!r)
        return 0;
    tpa_reader_set_max_read(r, max_read);
    tpa_reader_set_lenient(r, (data[0] & 1) != 0);
    tpa_event ev;
    /* The analyses behind report/steps/analyze see every event too: B/E and
     * async pairing, nesting, step windows (tiny budget: many shrinks). */
    tpa_report rep;
    memset(&rep, 0, sizeof rep);
    static const tpa_report_opts opts = { .group_steps = true, .quiet = true };
    tpa_report_run *run = tpa_report_begin(&rep, NULL, &opts, &err);
    tpa_steps_ctx *sc = tpa_steps_begin(NULL);
    while (tpa_reader_next(r, &ev, &err) > 0) {
        tpa_report_feed(run, &ev);
        tpa_steps_feed(sc, &ev);
        sink += (uint64_t)tpa_classify(&ev) + ev.name.n + ev.cat.n + ev.arg_name.n;
        if (ev.raw.n) sink += (unsigned char)ev.raw.p[ev.raw.n - 1];
        if (ev.v_ts.len) sink += (unsigned char)ev.raw.p[ev.v_ts.off + ev.v_ts.len - 1];
        if (ev.name.n) sink += (unsigned char)ev.name.p[ev.name.n - 1];
    }
    const tpa_meta *m = tpa_reader_meta(r);
    sink += m->events + m->good_end;
    tpa_report_end(run, m, "fuzz");
    tpa_steps_result res;
    if (tpa_steps_finish(sc, m->truncated, &res, &err) == 0) {
        sink += res.n ? (uint64_t)tpa_steps_quantile(&res, -1, 0.9) + (uint64_t)tpa_steps_mean(&res, TPA_P_CPU) : 0;
        tpa_steps_free(&res);
    }
    sink += rep.n_ops + rep.async_pairs;
    tpa_report_free(&rep);
    tpa_reader_close(r);
    (void)sink;
    return 0;
}
