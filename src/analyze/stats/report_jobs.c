/* report_jobs.c - `trainprof report -j N A B C ...`: several files read at
 * once, each into its own report, merged in the order given.
 *
 * A file's report depends only on its own events (threads, async pairs and
 * step windows start afresh per file), and the merged counts and sums are
 * the ones the sequential loop adds up, so the table is the same. The one
 * exception is a sum that saturates at the int64 limit, where the order of
 * additions matters: when the totals come anywhere near it, the files are
 * read again one after the other. Warnings and the first error come out
 * in file order.
 */
#include "analyze/trace/trace.h"
#include "analyze/stats/stats.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct file_job {
    const char *path;
    tpa_report rep;
    tpa_meta meta;        /* truncation facts for the warning */
    int rc;
    tpa_error err;
} file_job;

typedef struct pool {
    file_job *files;
    int n;
    const tpa_report_opts *o;
    pthread_mutex_t lock;
    int next;
} pool;

static void report_one(file_job *f, const tpa_report_opts *o)
{
    memset(&f->err, 0, sizeof f->err);
    tpa_reader *r = tpa_reader_open(f->path, &f->err);
    if (!r) { f->rc = -1; return; }
    tpa_report_run *run = tpa_report_begin(&f->rep, f->path, o, &f->err);
    if (!run) { tpa_reader_close(r); f->rc = -1; return; }
    tpa_event ev;
    int rc;
    while ((rc = tpa_reader_next(r, &ev, &f->err)) > 0)
        tpa_report_feed(run, &ev);
    f->meta = *tpa_reader_meta(r);
    f->meta.members = NULL;  /* owned by the reader, not needed here */
    f->meta.n_members = 0;
    tpa_report_end(run, &f->meta, f->path);
    tpa_reader_close(r);
    f->rc = rc < 0 ? -1 : 0;
}

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        int i = p->next < p->n ? p->next++ : -1;
        pthread_mutex_unlock(&p->lock);
        if (i < 0) return NULL;
        report_one(&p->files[i], p->o);
    }
}

static void run_pool(pool *p, int jobs)
{
    pthread_t th[TPA_MAX_JOBS];
    int started = 0;
    for (int i = 0; i < jobs - 1; i++) {
        if (pthread_create(&th[started], NULL, worker, p) != 0) break;
        started++;
    }
    worker(p);  /* the calling thread works too */
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}

/* No sum near the int64 limit: adding per file, then across files, gives
 * the sequential loop's numbers (self time adds and subtracts durations
 * that the totals count, so twice the totals bound every partial sum). */
static bool sums_exact(const file_job *files, int n)
{
    uint64_t sum = 0;
    for (int f = 0; f < n; f++)
        for (size_t i = 0; i < files[f].rep.n_ops; i++) {
            const tpa_op *op = &files[f].rep.ops[i];
            if (op->total_ns < 0 || op->total_ns == INT64_MAX || op->self_ns == INT64_MAX ||
                op->self_ns == INT64_MIN)
                return false;
            sum += (uint64_t)op->total_ns;
            if (sum > ((uint64_t)1 << 60)) return false;
        }
    return true;
}

static int report_sequential(tpa_report *rep, const char *const *paths, int n,
                             const tpa_report_opts *o, tpa_error *err)
{
    for (int i = 0; i < n; i++)
        if (tpa_report_file(rep, paths[i], o, err) != 0) return -1;
    return 0;
}

int tpa_report_files(tpa_report *rep, const char *const *paths, int n, const tpa_report_opts *o,
                     int jobs, tpa_error *err)
{
    if (jobs > n) jobs = n;
    bool reads_stdin = false;
    for (int i = 0; i < n; i++) reads_stdin |= strcmp(paths[i], "-") == 0;
    if (jobs <= 1 || reads_stdin || rep->n_ops || rep->n_files)
        return report_sequential(rep, paths, n, o, err);
    file_job *files = calloc((size_t)n, sizeof *files);
    if (!files) return report_sequential(rep, paths, n, o, err);
    tpa_report_opts quiet = *o;
    quiet.quiet = true;  /* warnings are printed below, in file order */
    pool p = { .files = files, .n = n, .o = &quiet };
    pthread_mutex_init(&p.lock, NULL);
    for (int i = 0; i < n; i++) files[i].path = paths[i];
    int reader_jobs = tpa_jobs();
    tpa_set_jobs(reader_jobs / jobs);  /* the threads left over go to each file's reader */
    run_pool(&p, jobs);
    tpa_set_jobs(reader_jobs);
    pthread_mutex_destroy(&p.lock);
    int rc = 0, upto = n;
    for (int i = 0; i < n; i++)
        if (files[i].rc != 0) { upto = i; rc = -1; break; }
    bool exact = sums_exact(files, upto);
    for (int i = 0; i < upto && exact; i++) {
        if (files[i].meta.truncated && !o->quiet) tpa_report_warn_truncated(paths[i], &files[i].meta);
        if (files[i].rep.negative_durs && !o->quiet)
            tpa_warn_negative(paths[i], files[i].rep.negative_durs, files[i].rep.negative_at);
        tpa_report_merge(rep, &files[i].rep);
    }
    if (rc != 0 && err) *err = files[upto].err;
    for (int i = 0; i < n; i++) tpa_report_free(&files[i].rep);
    free(files);
    if (!exact) return report_sequential(rep, paths, n, o, err);
    return rc;
}
