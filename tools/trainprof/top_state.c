/*
 * top_state.c - the runs `trainprof top` shows (see top_state.h).
 *
 * A run directory holds live.json while (and after) it runs; one of an
 * older trainprof, or one run with profiling.live false, only has its
 * summaries (training_summary.json, operations.json) once it closed.
 *
 * States: ended when live.json says closed, when its process is gone (same
 * host: no such pid, or a pid reused by a process started after the run),
 * or when another host's run has not updated its state for
 * TOP_HEARTBEAT_S; stalled when no step has ended for TOP_STALL_STEPS
 * median steps and at least TOP_STALL_MIN_S; running otherwise.
 */
#include "top_state.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "top_json.h"
#include "util/fileio.h"
#include "util/procstat.h"

typedef struct top_clock {
    uint64_t wall, mono, boot;
    char host[256];
} top_clock;

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void clock_now(top_clock *c)
{
    c->wall = clock_ns(CLOCK_REALTIME);
    c->mono = clock_ns(CLOCK_MONOTONIC);
    c->boot = clock_ns(CLOCK_BOOTTIME);
    tpu_hostname(c->host, sizeof c->host);
}

const char *top_state_name(top_state s)
{
    static const char *const names[] = {"running", "stalled", "ended", "unknown"};
    return names[s];
}

static double file_mtime(const char *dir, const char *name)
{
    char path[PATH_MAX + 400];
    struct stat st;
    if (name)
        snprintf(path, sizeof path, "%s/%s", dir, name);
    else
        snprintf(path, sizeof path, "%s", dir);
    if (stat(path, &st) != 0)
        return -1;
    return (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
}

static int has_file(const char *dir, const char *name)
{
    return file_mtime(dir, name) >= 0;
}

static int is_run_dir(const char *dir)
{
    return has_file(dir, "live.json") || has_file(dir, "training_summary.json") ||
           has_file(dir, "config.json");
}

/* Reads and parses dir/name; 0, or -1 with the reason in err. */
static int load_json(const char *dir, const char *name, tj_doc *doc, char *err, size_t errlen)
{
    char path[PATH_MAX + 400], perr[256];
    char *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (tpu_read_file(path, &text, &len, perr, sizeof perr) != 0) {
        snprintf(err, errlen, "%s", perr);
        return -1;
    }
    int rc = tj_parse(doc, text, len, perr, sizeof perr);
    free(text);
    if (rc != 0)
        snprintf(err, errlen, "%s: %.200s", name, perr);
    return rc;
}

/* Same host, and is process pid still the run's? A pid can be reused:
 * a process started after the run opened is not the run's. */
static int process_alive(int pid, uint64_t start_mono, const top_clock *now)
{
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    unsigned long long start_ticks = tpu_proc_start_ticks(pid);
    if (!start_ticks)
        return 1; /* alive (kill found it), start unreadable: take it as the run's */
    double start_boot = (double)start_ticks / (double)sysconf(_SC_CLK_TCK);
    /* boot time runs ahead of monotonic time by the time suspended */
    double suspended = ((double)now->boot - (double)now->mono) / 1e9;
    return start_boot <= (double)start_mono / 1e9 + suspended + 2.0;
}

static double num_or_nan(const tj_doc *d, const tj_node *o, const char *key)
{
    return tj_num(d, o, key, NAN);
}

static void read_zones(top_run *r, const tj_doc *d, const tj_node *top)
{
    for (int i = 0; i < (top ? top->count : 0) && r->n_zones < TOP_ZONES; i++) {
        const tj_node *z = tj_at(d, top, i);
        const char *name = tj_str(d, z, "name", NULL);
        double share = tj_num(d, z, "share", NAN);
        if (!name || isnan(share))
            continue;
        snprintf(r->zones[r->n_zones].name, sizeof r->zones[0].name, "%s", name);
        r->zones[r->n_zones++].share = share;
    }
}

static void set_state(top_run *r, uint64_t steps_ended, const top_clock *now, int same_host,
                      uint64_t hb_wall, int closed, int alive)
{
    if (closed) {
        r->state = TOP_ENDED;
        snprintf(r->reason, sizeof r->reason, "closed");
        return;
    }
    if (same_host && !alive) {
        r->state = TOP_ENDED;
        snprintf(r->reason, sizeof r->reason, "process gone");
        return;
    }
    double hb_age = ((double)now->wall - (double)hb_wall) / 1e9;
    if (!same_host && hb_age > TOP_HEARTBEAT_S) {
        r->state = TOP_ENDED;
        snprintf(r->reason, sizeof r->reason, "no update for %.0f s", hb_age);
        return;
    }
    r->state = TOP_RUNNING;
    if (steps_ended && !isnan(r->median_step_s) && !isnan(r->since_step_s)) {
        double limit = TOP_STALL_STEPS * r->median_step_s;
        if (limit < TOP_STALL_MIN_S)
            limit = TOP_STALL_MIN_S;
        if (r->since_step_s >= limit)
            r->state = TOP_STALLED;
    }
}

static int load_live(top_run *r, const char *dir, const top_clock *now)
{
    tj_doc d;
    if (load_json(dir, "live.json", &d, r->reason, sizeof r->reason) != 0) {
        r->state = TOP_UNKNOWN;
        return -1;
    }
    const tj_node *o = tj_root(&d);
    if (!o || o->type != TJ_OBJ || strcmp(tj_str(&d, o, "format", ""), "trainprof-live") != 0) {
        snprintf(r->reason, sizeof r->reason, "live.json: not a trainprof live state");
        r->state = TOP_UNKNOWN;
        tj_free(&d);
        return -1;
    }
    r->live = 1;
    r->pid = (int)tj_num(&d, o, "pid", -1);
    r->rank = (int)tj_num(&d, o, "rank", -1);
    r->world_size = (int)tj_num(&d, o, "world_size", -1);
    snprintf(r->host, sizeof r->host, "%s", tj_str(&d, o, "host", ""));
    snprintf(r->job_id, sizeof r->job_id, "%s", tj_str(&d, o, "job_id", ""));
    r->step = tj_u64(&d, o, "steps", 0);
    r->last_step_s = num_or_nan(&d, o, "last_step_s");
    r->median_step_s = num_or_nan(&d, o, "median_step_s");
    r->mean_step_s = num_or_nan(&d, o, "mean_step_s");
    r->samples_per_s = num_or_nan(&d, o, "samples_per_s");
    r->data_share = num_or_nan(&d, o, "data_share");
    read_zones(r, &d, tj_get(&d, o, "top"));
    const tj_node *t = tj_get(&d, o, "step_times_s");
    for (int i = 0; t && i < t->count && r->n_times < TOP_TIMES; i++) {
        const tj_node *v = tj_at(&d, t, i);
        if (v->type == TJ_NUM)
            r->times[r->n_times++] = v->num;
    }
    const tj_node *rss = tj_get(&d, o, "rss_bytes"), *gpu = tj_get(&d, o, "gpu_bytes");
    if ((r->have_rss = rss && rss->type == TJ_NUM))
        r->rss_bytes = tj_u64(&d, o, "rss_bytes", 0);
    if ((r->have_gpu = gpu && gpu->type == TJ_NUM))
        r->gpu_bytes = tj_u64(&d, o, "gpu_bytes", 0);
    /* seconds since the last step end (or since the start): one host's
     * monotonic clock where it can, else the wall clocks */
    int same_host = r->host[0] && strcmp(r->host, now->host) == 0;
    const char *end_key = r->step ? "last_step_end_mono_ns" : "start_mono_ns";
    uint64_t since_mono = tj_u64(&d, o, end_key, 0);
    uint64_t since_wall = tj_u64(&d, o, r->step ? "last_step_end_wall_ns" : "start_wall_ns", 0);
    if (same_host && since_mono)
        r->since_step_s = ((double)now->mono - (double)since_mono) / 1e9;
    else if (since_wall)
        r->since_step_s = ((double)now->wall - (double)since_wall) / 1e9;
    if (r->since_step_s < 0)
        r->since_step_s = 0;
    int closed = tj_bool(&d, o, "closed", 0);
    const char *in_zone = tj_str(&d, o, "in_zone", NULL);
    double in_s = tj_num(&d, o, "in_zone_s", NAN);
    double age = ((double)now->wall - (double)tj_u64(&d, o, "heartbeat_wall_ns", now->wall)) / 1e9;
    if (in_zone && !closed && !isnan(in_s)) {
        snprintf(r->in_zone, sizeof r->in_zone, "%s", in_zone);
        r->in_zone_s = in_s;
    }
    int alive = same_host && !closed
                    ? process_alive(r->pid, tj_u64(&d, o, "start_mono_ns", 0), now)
                    : 1;
    set_state(r, r->step, now, same_host, tj_u64(&d, o, "heartbeat_wall_ns", 0), closed, alive);
    if (r->state == TOP_STALLED && r->in_zone[0] && age > 0)
        r->in_zone_s += age; /* no step since: still there, as of now */
    if (r->state == TOP_ENDED)
        r->in_zone[0] = '\0', r->in_zone_s = NAN;
    tj_free(&d);
    return 0;
}

/* A run without live.json: what its summaries say (written at close). */
static void load_summary(top_run *r, const char *dir)
{
    tj_doc d;
    char err[256];
    r->state = TOP_ENDED;
    if (load_json(dir, "training_summary.json", &d, err, sizeof err) != 0) {
        r->state = TOP_UNKNOWN;
        snprintf(r->reason, sizeof r->reason,
                 "no live state and no summary (profiling.live off, or not closed yet)");
        return;
    }
    const tj_node *o = tj_root(&d);
    snprintf(r->reason, sizeof r->reason, "closed (no live state: summary files)");
    r->pid = (int)tj_num(&d, o, "pid", -1);
    r->rank = (int)tj_num(&d, o, "rank", -1);
    snprintf(r->host, sizeof r->host, "%s", tj_str(&d, o, "host", ""));
    r->step = tj_u64(&d, o, "total_steps", 0);
    r->median_step_s = num_or_nan(&d, o, "median_time_per_step");
    r->mean_step_s = num_or_nan(&d, o, "average_time_per_step");
    r->samples_per_s = num_or_nan(&d, o, "samples_per_second");
    tj_free(&d);
    if (load_json(dir, "operations.json", &d, err, sizeof err) != 0)
        return;
    const tj_node *ops = tj_root(&d);
    for (int i = 0; ops && i < ops->count && r->n_zones < TOP_ZONES; i++) {
        const tj_node *op = tj_at(&d, ops, i);
        double pct = tj_num(&d, op, "percent_of_step_time", NAN);
        if (!tj_bool(&d, op, "top_level", 0) || isnan(pct))
            continue;
        snprintf(r->zones[r->n_zones].name, sizeof r->zones[0].name, "%s",
                 tj_str(&d, op, "name", "?"));
        r->zones[r->n_zones++].share = pct / 100.0;
    }
    tj_free(&d);
}

static top_run *add_run(top_set *set, const char *dir, const top_clock *now)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        top_run *runs = realloc(set->runs, cap * sizeof *runs);
        if (!runs)
            return NULL;
        set->runs = runs;
        set->cap = cap;
    }
    top_run *r = &set->runs[set->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->rank = r->pid = r->world_size = -1;
    r->last_step_s = r->median_step_s = r->mean_step_s = NAN;
    r->samples_per_s = r->since_step_s = r->data_share = r->in_zone_s = NAN;
    r->mtime = file_mtime(dir, NULL);
    double lt = file_mtime(dir, "live.json");
    if (lt > r->mtime)
        r->mtime = lt;
    if (has_file(dir, "live.json"))
        load_live(r, dir, now);
    else
        load_summary(r, dir);
    return r;
}

/* rank<r> or rank<r>_<k>: r, and k (1 for rank<r>); -1 when not one. */
static long rank_dir_name(const char *name, long *restart)
{
    char *end;
    if (strncmp(name, "rank", 4) != 0 || !isdigit((unsigned char)name[4]))
        return -1;
    long r = strtol(name + 4, &end, 10);
    *restart = 1;
    if (*end == '_' && isdigit((unsigned char)end[1]))
        *restart = strtol(end + 1, &end, 10);
    return *end ? -1 : r;
}

typedef struct rank_entry {
    long rank, restart;
    char name[256];
} rank_entry;

static int cmp_rank_entry(const void *a, const void *b)
{
    const rank_entry *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->restart > y->restart) - (x->restart < y->restart);
}

/* The rank directories of a job directory, the newest restart of each. */
static size_t job_ranks(const char *dir, rank_entry **out)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    rank_entry *v = NULL;
    size_t n = 0, cap = 0;
    while (d && (de = readdir(d)) != NULL) {
        long restart, r = rank_dir_name(de->d_name, &restart);
        if (r < 0 || strlen(de->d_name) >= sizeof v->name)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            rank_entry *nv = realloc(v, cap * sizeof *nv);
            if (!nv)
                break;
            v = nv;
        }
        v[n].rank = r;
        v[n].restart = restart;
        snprintf(v[n].name, sizeof v[n].name, "%s", de->d_name);
        n++;
    }
    if (d)
        closedir(d);
    if (n)
        qsort(v, n, sizeof *v, cmp_rank_entry);
    size_t k = 0; /* keep the last (newest restart) of each rank */
    for (size_t i = 0; i < n; i++) {
        if (k && v[k - 1].rank == v[i].rank)
            k--;
        v[k++] = v[i];
    }
    *out = v;
    return k;
}

static int is_job_dir(const char *dir)
{
    if (has_file(dir, "job.json"))
        return 1;
    rank_entry *v;
    size_t n = job_ranks(dir, &v);
    free(v);
    return n > 0;
}

static void load_job(top_set *set, const char *dir, const top_clock *now)
{
    rank_entry *v;
    size_t n = job_ranks(dir, &v);
    char path[PATH_MAX + 300];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
        if (is_run_dir(path))
            add_run(set, path, now);
    }
    free(v);
}

/* One entry of a parent directory: a run or a job, with its newest time. */
typedef struct group {
    char dir[PATH_MAX];
    int job;
    double mtime;
    int fresh; /* a live.json updated within TOP_HEARTBEAT_S */
} group;

static void group_times(group *g, double now_s)
{
    g->mtime = file_mtime(g->dir, NULL);
    rank_entry *v = NULL;
    size_t n = g->job ? job_ranks(g->dir, &v) : 1;
    char path[PATH_MAX + 300];
    for (size_t i = 0; i < n; i++) {
        if (g->job)
            snprintf(path, sizeof path, "%s/%s", g->dir, v[i].name);
        else
            snprintf(path, sizeof path, "%s", g->dir);
        double t = file_mtime(path, "live.json");
        if (t > g->mtime)
            g->mtime = t;
        if (t >= 0 && now_s - t < TOP_HEARTBEAT_S)
            g->fresh = 1;
    }
    free(v);
}

static void load_group(top_set *set, const group *g, const top_clock *now)
{
    if (g->job)
        load_job(set, g->dir, now);
    else
        add_run(set, g->dir, now);
}

/* A parent of runs: the runs still going, else the newest run or job. */
static void load_parent(top_set *set, const char *dir, const top_clock *now)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    group *gs = NULL;
    size_t n = 0, cap = 0;
    double now_s = (double)now->wall / 1e9;
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            group *ng = realloc(gs, cap * sizeof *ng);
            if (!ng)
                break;
            gs = ng;
        }
        group *g = &gs[n];
        memset(g, 0, sizeof *g);
        snprintf(g->dir, sizeof g->dir, "%s/%s", dir, de->d_name);
        if (is_run_dir(g->dir))
            g->job = 0;
        else if (is_job_dir(g->dir))
            g->job = 1;
        else
            continue;
        group_times(g, now_s);
        n++;
    }
    if (d)
        closedir(d);
    size_t going = 0;
    long last_going = -1;
    for (size_t i = 0; i < n; i++) {
        if (!gs[i].fresh)
            continue;
        size_t before = set->n;
        load_group(set, &gs[i], now);
        int live = 0;
        for (size_t k = before; k < set->n; k++)
            live |= set->runs[k].state != TOP_ENDED;
        if (live) {
            going++;
            last_going = (long)i;
        }
        else
            set->n = before; /* ended: not shown when others still go */
    }
    long newest = -1;
    for (size_t i = 0; i < n && !going; i++)
        if (newest < 0 || gs[i].mtime > gs[newest].mtime)
            newest = (long)i;
    if (newest >= 0) {
        load_group(set, &gs[newest], now);
        snprintf(set->title, sizeof set->title, "%s (the newest under %s)", gs[newest].dir, dir);
    } else if (going == 1) {
        snprintf(set->title, sizeof set->title, "%s", gs[last_going].dir);
    } else {
        snprintf(set->title, sizeof set->title, "%zu runs going under %s", going, dir);
    }
    if (going == 1 || newest >= 0) {
        const group *g = newest >= 0 ? &gs[newest] : NULL;
        if (!g && last_going >= 0)
            g = &gs[last_going];
        set->one_job = g && g->job;
    }
    free(gs);
}

/* ---- straggler and order ------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The rank holding the others back: among the ranks still going (all of
 * them once every one ended), the one furthest behind in steps when it is
 * TOP_LAG_STEPS or more behind the leader; else the one with the slowest
 * median step when that is TOP_SLOW_RATIO above the ranks' median. */
static long find_straggler(const top_set *set)
{
    size_t going = 0, n = 0;
    for (size_t i = 0; i < set->n; i++)
        going += set->runs[i].state == TOP_RUNNING || set->runs[i].state == TOP_STALLED;
    double *med = malloc((set->n + 1) * sizeof *med);
    long behind = -1, slow = -1;
    size_t members = 0;
    uint64_t lead = 0;
    if (!med)
        return -1;
    for (size_t i = 0; i < set->n; i++) {
        const top_run *r = &set->runs[i];
        int pool = going ? (r->state == TOP_RUNNING || r->state == TOP_STALLED)
                         : r->state == TOP_ENDED;
        if (!pool || r->rank < 0)
            continue;
        members++;
        if (r->step > lead)
            lead = r->step;
        if (behind < 0 || r->step < set->runs[behind].step)
            behind = (long)i;
        if (!isnan(r->median_step_s)) {
            med[n++] = r->median_step_s;
            if (slow < 0 || r->median_step_s > set->runs[slow].median_step_s)
                slow = (long)i;
        }
    }
    long pick = -1;
    if (members >= 2 && behind >= 0 && lead - set->runs[behind].step >= TOP_LAG_STEPS) {
        pick = behind;
    } else if (n >= 2 && slow >= 0) {
        qsort(med, n, sizeof *med, cmp_double);
        double m = n % 2 ? med[n / 2] : (med[n / 2 - 1] + med[n / 2]) / 2;
        if (set->runs[slow].median_step_s >= TOP_SLOW_RATIO * m && set->runs[slow].median_step_s > m)
            pick = slow;
    }
    free(med);
    return pick;
}

static int state_order(top_state s)
{
    return s == TOP_STALLED ? 0 : s == TOP_RUNNING ? 1 : s == TOP_UNKNOWN ? 2 : 3;
}

static int cmp_run(const void *a, const void *b)
{
    const top_run *x = a, *y = b;
    if (x->straggler != y->straggler)
        return y->straggler - x->straggler;
    int sx = state_order(x->state), sy = state_order(y->state);
    if (sx != sy)
        return sx - sy;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    double mx = isnan(x->median_step_s) ? -1 : x->median_step_s;
    double my = isnan(y->median_step_s) ? -1 : y->median_step_s;
    if (mx != my)
        return mx > my ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->dir, y->dir);
}

int top_load(top_set *set, const char *path, char *err, size_t errlen)
{
    top_clock now;
    struct stat st;
    memset(set, 0, sizeof *set);
    set->straggler = -1;
    snprintf(set->path, sizeof set->path, "%s", path);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: %s (PATH: a run directory, a job directory or a directory holding "
                              "them; default ./runs)",
                 path, stat(path, &st) != 0 ? strerror(errno) : "not a directory");
        return -1;
    }
    clock_now(&now);
    if (is_run_dir(path)) {
        add_run(set, path, &now);
        snprintf(set->title, sizeof set->title, "%s", path);
    } else if (is_job_dir(path)) {
        load_job(set, path, &now);
        set->one_job = 1;
        snprintf(set->title, sizeof set->title, "%s", path);
    } else {
        load_parent(set, path, &now);
    }
    if (set->n == 0) {
        snprintf(err, errlen, "no runs in %s (expected a run directory, a job directory with rank<r>/ "
                              "directories, or a directory holding them)", path);
        return -2;
    }
    if (!set->one_job && set->n >= 2 && set->runs[0].job_id[0]) {
        set->one_job = 1;
        for (size_t i = 1; i < set->n; i++)
            set->one_job &= strcmp(set->runs[i].job_id, set->runs[0].job_id) == 0;
    }
    long s = set->one_job ? find_straggler(set) : -1;
    if (s >= 0)
        set->runs[s].straggler = 1;
    qsort(set->runs, set->n, sizeof *set->runs, cmp_run);
    set->straggler = s >= 0 ? 0 : -1;
    return 0;
}

void top_free(top_set *set)
{
    free(set->runs);
    memset(set, 0, sizeof *set);
    set->straggler = -1;
}
