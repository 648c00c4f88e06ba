/*
 * live.c - live.json, the state `trainprof top` reads while a run goes on
 * (issue 30; format in docs/TOP.md).
 *
 * A sink like the others: step and memory callbacks keep a ring of the last
 * LIVE_STEPS steps (duration, samples, data-loading time, the largest
 * top-level zones of the stepping thread) and the latest RSS / GPU memory.
 * Nothing is written from those callbacks, which may also run on a thread
 * reading statistics (tp_session_operations). The collector thread alone
 * writes, at most once a second: tpi_live_prepare formats the state under
 * the collector lock (a few microseconds), tpi_live_write puts it on disk
 * after the lock is released. The file is written whole beside live.json
 * and renamed over it, so a reader sees the previous state or the new one,
 * never a part; nobody waits for anybody (no lock, no fsync: the state is
 * for watching, a crash loses nothing that the summaries keep). Session
 * close writes the final state with "closed": true.
 *
 * A failed write prints one warning and stops the live state; it is not an
 * I/O error of the run (nothing recorded is lost) and training goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "sink/live.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/json.h"
#include "util/names_rule.h"

#define LIVE_STEPS 32      /* ring: median, sparkline, zones, rates */
#define LIVE_OPS 12        /* largest top-level zones kept per step */
#define LIVE_TOP 8         /* zones written */
#define LIVE_PERIOD_NS 1000000000ull
#define LIVE_MEM_STALE_NS 2000000000ull /* older: RSS from /proc/self/statm */

typedef struct live_op {
    uint32_t name_id;
    uint64_t ns;
} live_op;

typedef struct live_step {
    uint64_t dur_ns, samples, data_ns;
    uint32_t n_ops;
    live_op ops[LIVE_OPS];
} live_step;

struct tpi_live {
    tpi_sink base;
    /* state: written by the sink callbacks (under the collector lock) */
    live_step ring[LIVE_STEPS];
    uint64_t steps;               /* steps ended */
    uint64_t last_end_ns;         /* session ns of the last step end */
    uint64_t step_sum_ns;         /* all steps */
    int have_rss, have_gpu;
    uint64_t rss, gpu, mem_mono;  /* mem_mono: when the sample was taken */
    unsigned char *data_name;     /* by name id: 0 unknown, 1 no, 2 data loading */
    size_t data_cap;
    int closed;
    /* output: the collector thread only (and the closing thread at close) */
    uint64_t last_write_mono;
    tpu_buf text;
    int ready;                    /* text holds a state not written yet */
    int write_failed;             /* the collector's; made `failed` under the lock */
    char path[1100], tmp[1100];
};


static int data_loading_id(tpi_live *L, uint32_t id)
{
    if (id >= L->data_cap) {
        size_t cap = L->data_cap ? L->data_cap : 64;
        while (cap <= id)
            cap *= 2;
        unsigned char *d = realloc(L->data_name, cap);
        if (!d)
            return tpu_name_is_data_loading(tpi_names_get(id));
        memset(d + L->data_cap, 0, cap - L->data_cap);
        L->data_name = d;
        L->data_cap = cap;
    }
    if (!L->data_name[id])
        L->data_name[id] = tpu_name_is_data_loading(tpi_names_get(id)) ? 2 : 1;
    return L->data_name[id] == 2;
}

/* Keeps op among the LIVE_OPS largest of the step (smallest replaced). */
static void keep_op(live_step *st, uint32_t id, uint64_t ns)
{
    if (st->n_ops < LIVE_OPS) {
        st->ops[st->n_ops++] = (live_op){id, ns};
        return;
    }
    uint32_t min = 0;
    for (uint32_t i = 1; i < LIVE_OPS; i++)
        if (st->ops[i].ns < st->ops[min].ns)
            min = i;
    if (ns > st->ops[min].ns)
        st->ops[min] = (live_op){id, ns};
}

static void live_step_cb(tpi_sink *k, const tpi_step_info *si)
{
    tpi_live *L = (tpi_live *)k;
    live_step *st = &L->ring[si->step % LIVE_STEPS];
    uint64_t dur = si->end_ns > si->begin_ns ? si->end_ns - si->begin_ns : 0;
    memset(st, 0, sizeof *st);
    st->dur_ns = dur;
    st->samples = si->samples;
    for (size_t i = 0; i < si->n_ops; i++) {
        const tpi_step_op *o = &si->ops[i];
        if (o->background) /* another thread's zone: not a part of this step's time */
            continue;
        if (data_loading_id(L, o->name_id))
            st->data_ns += o->total_ns;
        keep_op(st, o->name_id, o->total_ns);
    }
    L->steps = si->step + 1;
    L->last_end_ns = si->end_ns;
    L->step_sum_ns += dur;
}

static void live_memory_cb(tpi_sink *k, const tpi_mem_sample *m)
{
    tpi_live *L = (tpi_live *)k;
    if (m->have_process) {
        L->have_rss = 1;
        L->rss = m->rss_bytes;
        L->mem_mono = tpi_mono_ns();
    }
    if (m->n_devices > 0) {
        uint64_t g = 0;
        for (int i = 0; i < m->n_devices && i < TPI_MAX_DEVICES; i++) {
            const tpi_device_sample *d = &m->devices[i];
            g += d->have_process_used ? d->process_used_bytes : d->mem.allocated_bytes;
        }
        L->have_gpu = 1;
        L->gpu = g;
    }
}

/* RSS when no memory sample is recent (profiling.memory off, or no
 * sample at step ends): one read of /proc/self/statm. */
static void fresh_rss(tpi_live *L, uint64_t now)
{
    if (L->have_rss && now - L->mem_mono < LIVE_MEM_STALE_NS)
        return;
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long long size, res;
    if (n <= 0)
        return;
    buf[n] = '\0';
    if (sscanf(buf, "%llu %llu", &size, &res) == 2) {
        L->rss = res * (uint64_t)sysconf(_SC_PAGESIZE);
        L->have_rss = 1;
        L->mem_mono = now;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct zone_sum {
    uint32_t id;
    uint64_t ns;
} zone_sum;

static int cmp_zone(const void *a, const void *b)
{
    const zone_sum *x = a, *y = b;
    return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : (x->id > y->id) - (x->id < y->id);
}

/* The ring's steps, oldest first, and the zones over them. */
static void write_window(tpi_live *L, tpu_json *j)
{
    uint64_t n = L->steps < LIVE_STEPS ? L->steps : LIVE_STEPS;
    uint64_t durs[LIVE_STEPS], sum = 0, samples = 0, data = 0;
    zone_sum zones[LIVE_STEPS * LIVE_OPS];
    size_t nz = 0;
    tpu_json_key(j, "step_times_s");
    tpu_json_begin_array(j);
    for (uint64_t i = 0; i < n; i++) {
        const live_step *st = &L->ring[(L->steps - n + i) % LIVE_STEPS];
        durs[i] = st->dur_ns;
        sum += st->dur_ns;
        samples += st->samples;
        data += st->data_ns;
        tpu_json_double(j, (double)st->dur_ns / 1e9);
        for (uint32_t o = 0; o < st->n_ops; o++) {
            size_t z = 0;
            while (z < nz && zones[z].id != st->ops[o].name_id)
                z++;
            if (z == nz)
                zones[nz++] = (zone_sum){st->ops[o].name_id, 0};
            zones[z].ns += st->ops[o].ns;
        }
    }
    tpu_json_end_array(j);
    tpu_json_kv_uint(j, "window_steps", n);
    qsort(durs, n, sizeof durs[0], cmp_u64);
    if (n) {
        double med = n % 2 ? (double)durs[n / 2] : ((double)durs[n / 2 - 1] + (double)durs[n / 2]) / 2;
        tpu_json_kv_double(j, "median_step_s", med / 1e9);
    } else {
        tpu_json_key(j, "median_step_s");
        tpu_json_null(j);
    }
    tpu_json_key(j, "samples_per_s");
    if (samples && sum)
        tpu_json_double(j, (double)samples / ((double)sum / 1e9));
    else
        tpu_json_null(j);
    tpu_json_key(j, "data_share");
    if (sum)
        tpu_json_double(j, (double)data / (double)sum);
    else
        tpu_json_null(j);
    qsort(zones, nz, sizeof zones[0], cmp_zone);
    tpu_json_key(j, "top");
    tpu_json_begin_array(j);
    for (size_t z = 0; z < nz && z < LIVE_TOP && sum; z++) {
        tpu_json_begin_object(j);
        tpu_json_kv_string(j, "name", tpi_names_get(zones[z].id));
        tpu_json_kv_double(j, "share", (double)zones[z].ns / (double)sum);
        tpu_json_end_object(j);
    }
    tpu_json_end_array(j);
}

static void kv_opt_uint(tpu_json *j, const char *key, int have, uint64_t v)
{
    if (have)
        tpu_json_kv_uint(j, key, v);
    else {
        tpu_json_key(j, key);
        tpu_json_null(j);
    }
}

/* "in_zone": where the stepping thread is, and for how long (null when in
 * no zone, and at close). */
static void write_open_zone(tpi_live *L, tpu_json *j, const char *path, uint64_t begin_ns,
                            uint64_t now_mono)
{
    uint64_t now_ns = now_mono > L->base.env->mono_base_ns ? now_mono - L->base.env->mono_base_ns : 0;
    tpu_json_key(j, "in_zone");
    if (path)
        tpu_json_string(j, path);
    else
        tpu_json_null(j);
    tpu_json_key(j, "in_zone_s");
    if (path)
        tpu_json_double(j, now_ns > begin_ns ? (double)(now_ns - begin_ns) / 1e9 : 0.0);
    else
        tpu_json_null(j);
}

static void format_state(tpi_live *L, uint64_t now_mono, uint64_t now_wall, const char *open_path,
                         uint64_t open_begin_ns)
{
    const tpi_sink_env *e = L->base.env;
    const tpi_job_info *job = e->job;
    tpu_json j;
    L->text.len = 0;
    L->text.oom = 0;
    tpu_json_init(&j, &L->text, 0);
    tpu_json_begin_object(&j);
    tpu_json_kv_string(&j, "format", "trainprof-live");
    tpu_json_kv_int(&j, "version", 1);
    tpu_json_kv_int(&j, "pid", e->pid);
    tpu_json_kv_string(&j, "host", e->host);
    tpu_json_kv_int(&j, "rank", e->rank);
    tpu_json_kv_int(&j, "world_size", job ? job->world_size : -1);
    tpu_json_kv_string(&j, "job_id", job ? job->job_id : "");
    tpu_json_kv_string(&j, "run_dir", e->run_dir);
    tpu_json_kv_bool(&j, "closed", L->closed);
    tpu_json_kv_uint(&j, "heartbeat_wall_ns", now_wall);
    tpu_json_kv_uint(&j, "heartbeat_mono_ns", now_mono);
    tpu_json_kv_uint(&j, "start_wall_ns", e->wall_base_ns);
    tpu_json_kv_uint(&j, "start_mono_ns", e->mono_base_ns);
    tpu_json_kv_uint(&j, "steps", L->steps);
    if (L->steps) {
        const live_step *last = &L->ring[(L->steps - 1) % LIVE_STEPS];
        tpu_json_kv_double(&j, "last_step_s", (double)last->dur_ns / 1e9);
        tpu_json_kv_double(&j, "mean_step_s", (double)L->step_sum_ns / (double)L->steps / 1e9);
        tpu_json_kv_uint(&j, "last_step_end_wall_ns", e->wall_base_ns + L->last_end_ns);
        tpu_json_kv_uint(&j, "last_step_end_mono_ns", e->mono_base_ns + L->last_end_ns);
    } else {
        const char *keys[] = {"last_step_s", "mean_step_s", "last_step_end_wall_ns",
                              "last_step_end_mono_ns"};
        for (int i = 0; i < 4; i++) {
            tpu_json_key(&j, keys[i]);
            tpu_json_null(&j);
        }
    }
    write_window(L, &j);
    write_open_zone(L, &j, open_path, open_begin_ns, now_mono);
    kv_opt_uint(&j, "rss_bytes", L->have_rss, L->rss);
    kv_opt_uint(&j, "gpu_bytes", L->have_gpu, L->gpu);
    tpu_json_end_object(&j);
    tpu_buf_putc(&L->text, '\n');
    L->ready = !L->text.oom;
}

int tpi_live_prepare(tpi_live *L, uint64_t now_mono, const char *open_path,
                     uint64_t open_begin_ns)
{
    if (!L || L->base.failed || L->closed)
        return 0;
    if (L->write_failed) { /* the other sink callbacks read `failed`: set under the lock */
        L->base.failed = 1;
        return 0;
    }
    if (L->last_write_mono && now_mono - L->last_write_mono < LIVE_PERIOD_NS)
        return 0;
    L->last_write_mono = now_mono;
    fresh_rss(L, now_mono);
    format_state(L, now_mono, tpi_wall_ns(), open_path, open_begin_ns);
    return L->ready;
}

/* The prepared text onto live.json: a whole new file renamed over it. */
void tpi_live_write(tpi_live *L)
{
    if (!L || !L->ready || L->write_failed)
        return;
    L->ready = 0;
    const char *what = "cannot write";
    int fd = open(L->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok = fd >= 0 && tpu_write_all(fd, L->text.data, L->text.len) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(L->tmp, L->path) != 0) {
        ok = 0;
        e = errno;
        what = "cannot rename onto";
    }
    if (ok)
        return;
    unlink(L->tmp);
    L->write_failed = 1; /* not counted in io_errors: no recorded data is lost */
    fprintf(stderr, "trainprof: warning: live state stopped (trainprof top will show this run as "
                    "it last was): %s '%s': %s (training goes on)\n",
            what, L->path, strerror(e));
}

static int live_close_cb(tpi_sink *k, const tpi_summary *sum)
{
    tpi_live *L = (tpi_live *)k;
    (void)sum;
    if (k->failed || L->write_failed)
        return 0;
    L->closed = 1;
    uint64_t now = tpi_mono_ns();
    fresh_rss(L, now);
    format_state(L, now, tpi_wall_ns(), NULL, 0);
    tpi_live_write(L);
    return 0;
}

static void live_destroy(tpi_sink *k)
{
    tpi_live *L = (tpi_live *)k;
    tpu_buf_free(&L->text);
    free(L->data_name);
    free(L);
}

static const tpi_sink_ops live_ops = {
    .name = "live.json",
    .step = live_step_cb,
    .memory = live_memory_cb,
    .close = live_close_cb,
    .destroy = live_destroy,
};

tpi_live *tpi_sink_live_new(const tpi_sink_env *env)
{
    if (!env || !env->settings || !env->settings->live || !env->run_dir)
        return NULL;
    tpi_live *L = calloc(1, sizeof *L);
    if (!L)
        return NULL;
    L->base.ops = &live_ops;
    L->base.env = env;
    if (tpu_path_join(L->path, sizeof L->path, env->run_dir, "live.json") != 0 ||
        tpu_path_join(L->tmp, sizeof L->tmp, env->run_dir, ".live.json.tmp") != 0) {
        free(L);
        return NULL;
    }
    return L;
}

tpi_sink *tpi_live_sink(tpi_live *L)
{
    return L ? &L->base : NULL;
}
