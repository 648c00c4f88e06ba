/*
 * job.c - the ranks of one job: job.json, and clock alignment across ranks
 * (tp_session_sync).
 *
 * job.json is written once, by the first rank to arrive: the text goes to a
 * private temporary file which is then link(2)ed to job.json; link fails
 * with EEXIST when another rank was first, so exactly one complete file
 * appears, with no lock and no partial reads. After a clock sync, rank 0
 * rewrites it (atomic rename) with every rank's offset.
 *
 * Clock alignment needs only the job's own barrier. Each of SYNC_ROUNDS
 * rounds, every rank reads its wall clock just before entering the barrier
 * (e) and just after leaving it (x). The barrier completes at one instant
 * T, after every rank entered and before any left, so on rank r
 * e_r <= T + o_r <= x_r, where o_r is rank r's clock offset. Against rank 0
 * that bounds o_r - o_0 to [e_r - x_0, x_r - e_0] in every round; the
 * rounds' intervals all hold the true offset, so their intersection does
 * too. The offset recorded is its midpoint and the error bound its half
 * width: a few barrier latencies at worst, usually far less, since some
 * round has rank r (then rank 0) arriving last. Rank 0's readings reach the
 * other ranks through a file in the job directory (which every rank must
 * see: the same file system), written before one more barrier.
 *
 * Ranks on rank 0's host (same kernel boot id) read the very same wall
 * clock, so their offset is exactly 0: that is what they record, with the
 * barrier estimate beside it (on a host with more ranks than cores a
 * barrier takes a scheduler tick, so the estimate's bound is ~1 ms there).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/session_internal.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/json.h"

#define SYNC_ROUNDS 32
#define SYNC_FILE ".clock_sync"

static void job_json(tpu_buf *b, const tp_session *s, int with_offsets);

static void fail(tp_error *err, int code, const char *fmt, const char *a, const char *b)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->code = code;
    snprintf(err->message, sizeof err->message, fmt, a, b);
}

void tpi_job_open(tp_session *s)
{
    char tmp[1100], path[1100], errbuf[256];
    const char *slash = strrchr(s->run_dir, '/');
    if (s->job.rank < 0 || !s->job.job_id[0] || !slash)
        return;
    snprintf(s->job_dir, sizeof s->job_dir, "%.*s", (int)(slash - s->run_dir), s->run_dir);
    tpu_buf b = {0};
    job_json(&b, s, 0);
    snprintf(tmp, sizeof tmp, "%s/.job.json.%d.%d", s->job_dir, s->job.rank, s->pid);
    snprintf(path, sizeof path, "%s/job.json", s->job_dir);
    if (tpu_write_file_atomic(tmp, b.data, b.len, errbuf, sizeof errbuf) != 0)
        fprintf(stderr, "trainprof: warning: %s\n", errbuf);
    else if (link(tmp, path) != 0 && errno != EEXIST)
        fprintf(stderr, "trainprof: warning: cannot create `%s`: %s\n", path, strerror(errno));
    unlink(tmp);
    tpu_buf_free(&b);
}

/* job.json: who the job is; with_offsets (rank 0 after a sync) adds every
 * rank's clock offset read from rank<r>/clock.json. */
static void job_json(tpu_buf *b, const tp_session *s, int with_offsets)
{
    tpu_json j;
    tpu_json_init(&j, b, 1);
    tpu_json_begin_object(&j);
    tpu_json_kv_string(&j, "job_id", s->job.job_id);
    tpu_json_kv_string(&j, "launcher", s->job.launcher[0] ? s->job.launcher : "config");
    tpu_json_kv_int(&j, "world_size", s->job.world_size);
    tpu_json_kv_int(&j, "written_by_rank", s->job.rank);
    tpu_json_kv_string(&j, "host", s->host);
    tpu_json_kv_uint(&j, "base_time_ns", s->env.wall_base_ns);
    tpu_json_kv_uint(&j, "monotonic_base_ns", s->env.mono_base_ns);
    tpu_json_kv_string(&j, "trainprof_version", tp_version());
    if (with_offsets) {
        tpu_json_key(&j, "clock_offsets_ns"); /* rank -> its wall clock minus rank 0's */
        tpu_json_begin_object(&j);
        DIR *d = opendir(s->job_dir);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            char path[1400], *text = NULL, *end;
            size_t len;
            if (strncmp(de->d_name, "rank", 4) != 0 || !isdigit((unsigned char)de->d_name[4]))
                continue;
            strtol(de->d_name + 4, &end, 10);
            if (*end) /* rank<r>_2 ...: a restart's directory, not the rank's first */
                continue;
            snprintf(path, sizeof path, "%s/%s/clock.json", s->job_dir, de->d_name);
            if (tpu_read_file(path, &text, &len, NULL, 0) != 0)
                continue;
            const char *p = strstr(text, "\"offset_ns\":");
            if (p)
                tpu_json_kv_int(&j, de->d_name + 4, strtoll(p + 12, NULL, 10));
            free(text);
        }
        if (d)
            closedir(d);
        tpu_json_end_object(&j);
    }
    tpu_json_end_object(&j);
    tpu_buf_putc(b, '\n');
}

/* The kernel's boot id ("-" when unreadable): equal on two ranks means one
 * kernel, hence one wall clock. */
static void boot_id(char *out, size_t len)
{
    char *text = NULL;
    size_t n = 0;
    snprintf(out, len, "-");
    if (tpu_read_file("/proc/sys/kernel/random/boot_id", &text, &n, NULL, 0) != 0)
        return;
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < len; i++)
        if (isxdigit((unsigned char)text[i]) || text[i] == '-')
            out[k++] = text[i];
    out[k] = '\0';
    if (k < 8)
        snprintf(out, len, "-");
    free(text);
}

/* Rank 0's readings: "seq N\n", "boot ID\n", then one "enter exit" line
 * per round. */
static int write_reference(const tp_session *s, uint64_t seq, const uint64_t *e,
                           const uint64_t *x, tp_error *err)
{
    char path[1100], errbuf[512], boot[64];
    tpu_buf b = {0};
    boot_id(boot, sizeof boot);
    tpu_buf_printf(&b, "seq %" PRIu64 "\nboot %s\n", seq, boot);
    for (int i = 0; i < SYNC_ROUNDS; i++)
        tpu_buf_printf(&b, "%" PRIu64 " %" PRIu64 "\n", e[i], x[i]);
    snprintf(path, sizeof path, "%s/" SYNC_FILE, s->job_dir);
    int rc = tpu_write_file_atomic(path, b.data, b.len, errbuf, sizeof errbuf);
    tpu_buf_free(&b);
    if (rc != 0)
        fail(err, TP_ERR_IO, "tp_session_sync: %.600s%s", errbuf, "");
    return rc ? TP_ERR_IO : 0;
}

/* Reads rank 0's readings of call `seq` into e0/x0 and whether rank 0 runs
 * on this kernel into *same_host. */
static int read_reference(const tp_session *s, uint64_t seq, uint64_t *e0, uint64_t *x0,
                          int *same_host, tp_error *err)
{
    char path[1100], *text = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/" SYNC_FILE, s->job_dir);
    if (tpu_read_file(path, &text, &len, NULL, 0) != 0) {
        fail(err, TP_ERR_STATE,
             "tp_session_sync: no reference from rank 0 in `%.400s` (%s; rank 0 must profile and "
             "see the same job directory)", path, strerror(errno));
        return TP_ERR_STATE;
    }
    char *p = text, *end, boot[64];
    int ok = strncmp(p, "seq ", 4) == 0 && strtoull(p + 4, &end, 10) == seq &&
             strncmp(end, "\nboot ", 6) == 0;
    if (ok) {
        boot_id(boot, sizeof boot);
        size_t n = strlen(boot);
        *same_host = strcmp(boot, "-") != 0 && strncmp(end + 6, boot, n) == 0 &&
                     end[6 + n] == '\n';
        end = strchr(end + 6, '\n');
        ok = end != NULL;
    }
    for (int i = 0; ok && i < SYNC_ROUNDS; i++) {
        e0[i] = strtoull(end, &p, 10);
        x0[i] = strtoull(p, &end, 10);
        ok = end != p;
    }
    free(text);
    if (!ok)
        fail(err, TP_ERR_STATE,
             "tp_session_sync: `%.400s` is not rank 0's reference for this call (rank 0 called "
             "tp_session_sync a different number of times%s)", path, ", or it is damaged");
    return ok ? 0 : TP_ERR_STATE;
}

/* Intersects the rounds' bounds on (rank clock - rank 0 clock). */
static void estimate(const uint64_t *e, const uint64_t *x, const uint64_t *e0,
                     const uint64_t *x0, int64_t *offset, uint64_t *error)
{
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    for (int i = 0; i < SYNC_ROUNDS; i++) {
        int64_t l = (int64_t)(e[i] - x0[i]), h = (int64_t)(x[i] - e0[i]);
        lo = l > lo ? l : lo;
        hi = h < hi ? h : hi;
    }
    if (lo > hi) { /* a clock stepped during the sync: keep the tightest round */
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < SYNC_ROUNDS; i++) {
            uint64_t w = (x[i] - e[i]) + (x0[i] - e0[i]);
            if (w < best) {
                best = w;
                lo = (int64_t)(e[i] - x0[i]);
                hi = (int64_t)(x[i] - e0[i]);
            }
        }
    }
    *offset = lo + (hi - lo) / 2;
    *error = (uint64_t)(hi - lo) / 2;
}

/* The sync's outcome: the offset used (exactly 0 on rank 0's host) and
 * the barrier estimate it was measured as. */
typedef struct clock_fit {
    int64_t offset;
    uint64_t error;
    int same_host;
    int64_t est_offset;
    uint64_t est_error;
} clock_fit;

static void write_clock_json(const tp_session *s, const clock_fit *f)
{
    char path[1100], errbuf[512];
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 1);
    tpu_json_begin_object(&j);
    tpu_json_kv_int(&j, "rank", s->job.rank);
    tpu_json_kv_string(&j, "host", s->host);
    tpu_json_kv_int(&j, "offset_ns", f->offset);
    tpu_json_kv_uint(&j, "error_ns", f->error);
    tpu_json_kv_string(&j, "method", f->same_host ? "same_host" : "barrier");
    tpu_json_kv_int(&j, "barrier_offset_ns", f->est_offset);
    tpu_json_kv_uint(&j, "barrier_error_ns", f->est_error);
    tpu_json_kv_int(&j, "rounds", SYNC_ROUNDS);
    tpu_json_kv_uint(&j, "base_time_ns", s->env.wall_base_ns);
    tpu_json_kv_uint(&j, "monotonic_base_ns", s->env.mono_base_ns);
    tpu_json_end_object(&j);
    tpu_buf_putc(&b, '\n');
    snprintf(path, sizeof path, "%s/clock.json", s->run_dir);
    if (tpu_write_file_atomic(path, b.data, b.len, errbuf, sizeof errbuf) != 0)
        fprintf(stderr, "trainprof: warning: %s\n", errbuf);
    tpu_buf_free(&b);
}

static void rewrite_job_json(const tp_session *s)
{
    char path[1100], errbuf[512];
    tpu_buf b = {0};
    job_json(&b, s, 1);
    snprintf(path, sizeof path, "%s/job.json", s->job_dir);
    if (tpu_write_file_atomic(path, b.data, b.len, errbuf, sizeof errbuf) != 0)
        fprintf(stderr, "trainprof: warning: %s\n", errbuf);
    tpu_buf_free(&b);
}

/* Calls the barrier unless an earlier one failed; counts failures. */
static void barrier_step(tp_barrier_fn barrier, void *user, int *failed)
{
    if (!*failed && barrier(user) != 0)
        *failed = 1;
}

int tp_session_sync(tp_session *s, tp_barrier_fn barrier, void *user, tp_error *err)
{
    uint64_t e[SYNC_ROUNDS], x[SYNC_ROUNDS], e0[SYNC_ROUNDS], x0[SYNC_ROUNDS];
    int failed = 0, rc = 0;
    if (err)
        memset(err, 0, sizeof *err);
    if (!barrier) {
        fail(err, TP_ERR_INVALID, "tp_session_sync: NULL barrier%s%s", "", "");
        return TP_ERR_INVALID;
    }
    for (int i = 0; i < SYNC_ROUNDS; i++) {
        e[i] = tpi_wall_ns();
        barrier_step(barrier, user, &failed);
        x[i] = tpi_wall_ns();
    }
    int in_job = s && !s->dead && s->job_dir[0];
    uint64_t seq = in_job ? ++s->sync_seq : 0;
    if (in_job && s->job.rank == 0)
        rc = write_reference(s, seq, e, x, err);
    barrier_step(barrier, user, &failed);
    if (in_job && !failed) {
        clock_fit f = {0, 0, 1, 0, 0}; /* rank 0: its own reference */
        if (s->job.rank != 0 &&
            (rc = read_reference(s, seq, e0, x0, &f.same_host, err)) == 0) {
            estimate(e, x, e0, x0, &f.est_offset, &f.est_error);
            if (!f.same_host) {
                f.offset = f.est_offset;
                f.error = f.est_error;
            }
        }
        if (rc == 0) {
            __atomic_store_n(&s->env.clock_error_ns, f.error, __ATOMIC_RELAXED);
            __atomic_store_n(&s->env.clock_offset_ns, f.offset, __ATOMIC_RELAXED);
            __atomic_store_n(&s->env.clock_synced, 1, __ATOMIC_RELEASE);
            write_clock_json(s, &f);
        }
    }
    barrier_step(barrier, user, &failed);
    if (in_job && !failed && s->job.rank == 0)
        rewrite_job_json(s);
    if (failed) {
        fail(err, TP_ERR_IO, "tp_session_sync: the barrier callback failed%s%s", "", "");
        return TP_ERR_IO;
    }
    if (s && !s->dead && !s->job_dir[0] && s->job.rank >= 0 && rc == 0) {
        fail(err, TP_ERR_STATE,
             "tp_session_sync: rank has no job directory (%s%s): set profiling.job_id so the "
             "ranks share one", "no job id from the launcher", "");
        return TP_ERR_STATE;
    }
    return rc;
}

int tp_session_clock_offset(const tp_session *s, int64_t *offset_ns, uint64_t *error_ns)
{
    if (!s || !__atomic_load_n(&s->env.clock_synced, __ATOMIC_ACQUIRE))
        return 0;
    if (offset_ns)
        *offset_ns = __atomic_load_n(&s->env.clock_offset_ns, __ATOMIC_RELAXED);
    if (error_ns)
        *error_ns = __atomic_load_n(&s->env.clock_error_ns, __ATOMIC_RELAXED);
    return 1;
}
