/* ranks_job.c - the ranks of a job directory, and the map run on several
 * cores (one rank per worker at a time; the reduce takes each summary as
 * soon as it is ready, under a lock, so memory holds `jobs` ranks' events
 * at most). */
#include "analyze/ranks/ranks.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_rank_dir_name(const char *name, int64_t *rank)
{
    if (strncmp(name, "rank", 4) != 0 || !isdigit((unsigned char)name[4])) return false;
    char *end;
    long long v = strtoll(name + 4, &end, 10);
    if (*end != '\0' && *end != '_') return false; /* rank<r> or rank<r>_<n> (a restart) */
    *rank = v;
    return true;
}

static int cmp_input(const void *a, const void *b)
{
    const tpa_rank_input *x = a, *y = b;
    uint64_t hx = (uint64_t)x->rank_hint, hy = (uint64_t)y->rank_hint; /* -1 (no hint) last */
    if (hx != hy) return hx < hy ? -1 : 1;
    return strcmp(x->path, y->path);
}

static void push(tpa_rank_input **v, size_t *n, size_t *cap, const char *dir, const char *name, int64_t hint)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        tpa_rank_input *nv = realloc(*v, *cap * sizeof *nv);
        if (!nv) abort();
        *v = nv;
    }
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (!p) abort();
    snprintf(p, len, "%s%s%s", dir, name[0] ? "/" : "", name);
    (*v)[(*n)++] = (tpa_rank_input){p, hint};
}

int tpa_job_inputs(const char *dir, tpa_rank_input **out, size_t *n, tpa_error *err)
{
    char sub[4096];
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    snprintf(sub, sizeof sub, "%s/profiler_traces", dir);
    if (tpa_is_dir(sub)) { /* a rank directory by itself */
        const char *base = strrchr(dir, '/');
        int64_t hint = -1;
        if (!is_rank_dir_name(base ? base + 1 : dir, &hint)) hint = -1;
        push(out, n, &cap, dir, "", hint);
        return 0;
    }
    DIR *d = opendir(dir);
    if (!d) {
        tpa_error_set(err, TPA_ERR_IO, "cannot read directory");
        snprintf(err->file, sizeof err->file, "%s", dir);
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int64_t rank;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (is_rank_dir_name(de->d_name, &rank) && tpa_is_dir(path))
            push(out, n, &cap, dir, de->d_name, rank);
        else if (tpa_is_trace_file_name(de->d_name) && !tpa_is_dir(path) && tpa_trace_file_usable(path))
            push(out, n, &cap, dir, de->d_name, -1);
    }
    closedir(d);
    if (!*n) {
        tpa_error_set(err, TPA_ERR_EMPTY, "no ranks here: expected rank<r>/ directories or trace files");
        snprintf(err->file, sizeof err->file, "%s", dir);
        return -1;
    }
    qsort(*out, *n, sizeof **out, cmp_input);
    return 0;
}

void tpa_job_inputs_free(tpa_rank_input *in, size_t n)
{
    for (size_t i = 0; i < n; i++) free(in[i].path);
    free(in);
}

typedef struct pool {
    const tpa_rank_input *in;
    size_t n, next;
    tpa_ranks *r;
    const char *summaries_dir;
    int failures;
    pthread_mutex_t lock;
} pool;

static int write_summary(const char *dir, const tpa_rank_summary *s, size_t index)
{
    char path[4096];
    if (s->rank >= 0) snprintf(path, sizeof path, "%s/rank%lld.json", dir, (long long)s->rank);
    else snprintf(path, sizeof path, "%s/input%zu.json", dir, index);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "trainprof: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    errno = 0;
    tpa_rank_summary_write(f, s);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "trainprof: cannot write %s: %s\n", path, errno ? strerror(errno) : "write error");
        remove(path);  /* a cut summary would be read by `combine` as a bad one */
        return -1;
    }
    return 0;
}

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->lock);
        if (i >= p->n) return NULL;
        tpa_rank_summary s;
        tpa_error err;
        memset(&err, 0, sizeof err);
        int rc = tpa_rank_map(p->in[i].path, p->in[i].rank_hint, &s, &err);
        pthread_mutex_lock(&p->lock);
        if (rc == 0) {
            tpa_ranks_add(p->r, &s);
            if (p->summaries_dir && write_summary(p->summaries_dir, &s, i) != 0) p->r->summaries_unwritten++;
        } else {
            tpa_ranks_add_failure(p->r, p->in[i].path, &err);
            p->failures++;
        }
        pthread_mutex_unlock(&p->lock);
        if (rc == 0) tpa_rank_summary_free(&s);
    }
}

int tpa_ranks_map_all(const tpa_rank_input *in, size_t n, int jobs, tpa_ranks *r, const char *summaries_dir)
{
    pool p = {in, n, 0, r, summaries_dir, 0, PTHREAD_MUTEX_INITIALIZER};
    if (jobs < 1) jobs = 1;
    if ((size_t)jobs > n) jobs = n ? (int)n : 1;
    pthread_t th[256];
    int started = 0;
    for (int k = 1; k < jobs && k < 256; k++)
        if (pthread_create(&th[started], NULL, worker, &p) == 0) started++;
    worker(&p);
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
    pthread_mutex_destroy(&p.lock);
    return p.failures;
}
