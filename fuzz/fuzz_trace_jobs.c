/* fuzz_trace_jobs.c - the `-j N` reader against the sequential one on
 * arbitrary bytes. Byte 0 picks the threads (2..5) and lenient mode, byte 1
 * the window per thread (1..256 bytes, so guessed cuts land everywhere);
 * the rest is the document. Any difference in events, metadata or error
 * aborts: a cut inside a string or a nested value must never be trusted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "analyze/trace/trace.h"
#include "analyze/trace/parallel.h"

typedef struct digest {
    uint64_t h, n;
    int rc, code;
    uint64_t offset;
    char msg[256];
    tpa_meta meta;
} digest;

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    return (h ^ tpu_hash_bytes(p, n)) * 1099511628211ULL;
}

static digest read_all(const uint8_t *doc, size_t n, int jobs, bool lenient)
{
    digest d;
    memset(&d, 0, sizeof d);
    d.h = 1469598103934665603ULL;
    tpa_error err;
    memset(&err, 0, sizeof err);
    tpa_set_jobs(jobs);
    tpa_reader *r = tpa_reader_open_mem(doc, n, &err);
    tpa_set_jobs(1);
    if (!r) abort();
    tpa_reader_set_lenient(r, lenient);
    tpa_event ev;
    while ((d.rc = tpa_reader_next(r, &ev, &err)) > 0) {
        d.n++;
        d.h = mix(d.h, ev.raw.p, ev.raw.n);
        d.h = mix(d.h, ev.name.p, ev.name.n);
        d.h = mix(d.h, ev.cat.p, ev.cat.n);
        d.h = mix(d.h, ev.arg_name.p, ev.arg_name.n);
        int64_t nums[] = { ev.ph, ev.ts_ns, ev.dur_ns, ev.pid, ev.tid, ev.device, (int64_t)ev.offset,
                           ev.on_device, ev.has_ts, ev.has_dur };
        d.h = mix(d.h, nums, sizeof nums);
    }
    if (d.rc < 0) {
        d.code = err.code;
        d.offset = err.offset;
        memcpy(d.msg, err.msg, sizeof d.msg);
    }
    d.meta = *tpa_reader_meta(r);
    tpa_reader_close(r);
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int jobs = 2 + data[0] % 4;
    bool lenient = (data[0] & 4) != 0;
    tpa_batch_set_window((size_t)data[1] + 1, (size_t)data[1] / 8 + 1);
    digest a = read_all(data + 2, size - 2, 1, lenient);
    digest b = read_all(data + 2, size - 2, jobs, lenient);
    tpa_batch_set_window(0, 0);
    const tpa_meta *x = &a.meta, *y = &b.meta;
    if (a.h != b.h || a.n != b.n || a.rc != b.rc || a.code != b.code || a.offset != b.offset ||
        strcmp(a.msg, b.msg) != 0 || x->events != y->events || x->non_objects != y->non_objects ||
        x->truncated != y->truncated || x->events_cut != y->events_cut ||
        x->truncated_at != y->truncated_at || x->good_end != y->good_end ||
        strcmp(x->close, y->close) != 0 || x->n_members != y->n_members)
        abort();
    return 0;
}
