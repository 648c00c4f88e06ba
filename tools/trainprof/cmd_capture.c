/* trainprof capture RUN_DIR|JOB_DIR...: asks running sessions for a
 * flight-recorder capture (docs/CAPTURES.md). Each run directory's
 * captures.json names its process (pid, host, start time); the process gets
 * SIGUSR1, its collector writes the capture, and this command waits for the
 * new entry and prints it. A job directory means every rank in it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "util/fileio.h"
#include "util/procstat.h"

#define MAX_RUNS 4096

typedef struct run {
    char dir[1200];
    long pid;
    unsigned long long start;
    char host[256];
    int entries;   /* entries before the signal */
    int done;      /* 1: answered, -1: not signalled */
} run;

static void usage(FILE *f)
{
    fprintf(f, "usage: trainprof capture [--timeout 10] RUN_DIR|JOB_DIR...\n"
               "  Asks the running session of each run directory (every rank of a job\n"
               "  directory) for a capture of its last profiling.capture_steps steps: sends\n"
               "  SIGUSR1 to the pid its captures.json names, waits for the new entry\n"
               "  (--timeout seconds, default 10) and prints it. Run it on the host of the\n"
               "  process. Exit status: 0 every run answered, 1 a run has ended or did not\n"
               "  answer in time, 2 bad input.\n");
}

static int has_index(const char *dir)
{
    char p[1300];
    struct stat st;
    snprintf(p, sizeof p, "%s/captures.json", dir);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The value text after "key": in the first line of captures.json. */
static const char *field(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *nl = strchr(text, '\n');
    const char *p = strstr(text, k);
    return p && (!nl || p < nl) ? p + strlen(k) : NULL;
}

static int count_entries(const char *text)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, "\"reason\":")); p++)
        n++;
    return n;
}

/* Reads dir/captures.json: the process and the number of entries. */
static int read_index(run *r, char **text_out)
{
    char p[1300], err[512];
    char *text = NULL;
    size_t len = 0;
    snprintf(p, sizeof p, "%s/captures.json", r->dir);
    if (tpu_read_file(p, &text, &len, err, sizeof err) != 0) {
        fprintf(stderr, "trainprof capture: %s\n", err);
        return -1;
    }
    const char *pid = field(text, "pid"), *start = field(text, "process_start"),
               *host = field(text, "host");
    if (!pid || !start || !host || *host != '"') {
        fprintf(stderr, "trainprof capture: %s: not a trainprof captures.json (no pid, host "
                        "and process_start on its first line)\n", p);
        free(text);
        return -1;
    }
    r->pid = strtol(pid, NULL, 10);
    r->start = strtoull(start, NULL, 10);
    size_t n = strcspn(host + 1, "\"");
    snprintf(r->host, sizeof r->host, "%.*s", (int)(n < sizeof r->host ? n : sizeof r->host - 1),
             host + 1);
    r->entries = count_entries(text);
    if (text_out)
        *text_out = text;
    else
        free(text);
    return 0;
}


/* Adds dir, or every subdirectory of it holding a captures.json (a job). */
static int collect(const char *dir, run *runs, int *n)
{
    if (has_index(dir)) {
        if (*n < MAX_RUNS)
            snprintf(runs[(*n)++].dir, sizeof runs[0].dir, "%s", dir);
        return 0;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "trainprof capture: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char sub[1200];
        if (e->d_name[0] == '.' || snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub)
            continue;
        if (has_index(sub) && *n < MAX_RUNS) {
            snprintf(runs[(*n)++].dir, sizeof runs[0].dir, "%s", sub);
            found++;
        }
    }
    closedir(d);
    if (!found) {
        fprintf(stderr, "trainprof capture: %s holds no captures.json, nor do its rank "
                        "directories: not a run or job directory of a session with "
                        "profiling.capture on\n", dir);
        return -1;
    }
    return 0;
}

/* Sends the signal; 0 when sent, 1 when the run's process is gone. */
static int signal_run(run *r)
{
    char host[256];
    tpu_hostname(host, sizeof host);
    if (strcmp(host, r->host) != 0) {
        fprintf(stderr, "trainprof capture: %s: the run is on host %s (this is %s): run "
                        "`trainprof capture` there\n", r->dir, r->host, host);
        return 1;
    }
    if (r->pid <= 0 || tpu_proc_start_ticks((int)r->pid) != r->start) {
        fprintf(stderr, "trainprof capture: %s: its process (pid %ld) has ended\n", r->dir, r->pid);
        return 1;
    }
    if (kill((pid_t)r->pid, SIGUSR1) != 0) {
        fprintf(stderr, "trainprof capture: %s: cannot signal pid %ld: %s\n", r->dir, r->pid,
                strerror(errno));
        return 1;
    }
    return 0;
}

/* Prints the entries after the first `skip` (one line each in the file). */
static void print_new(const run *r, const char *text)
{
    int k = 0;
    for (const char *p = strchr(text, '\n'); p; p = strchr(p + 1, '\n')) {
        const char *line = p + 1;
        if (strncmp(line, "{\"index\":", 9) != 0 || k++ < r->entries)
            continue;
        size_t n = strcspn(line, "\n");
        if (n && line[n - 1] == ',')
            n--;
        printf("%s: %.*s\n", r->dir, (int)n, line);
    }
}

int cmd_capture(int argc, char **argv)
{
    double timeout = 10;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--help") == 0 || strcmp(argv[first], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        char *end = NULL;
        if (strcmp(argv[first], "--timeout") == 0 && first + 1 < argc &&
            (timeout = strtod(argv[first + 1], &end)) >= 0 && end && !*end && end != argv[first + 1]) {
            first++;
            continue;
        }
        fprintf(stderr, "trainprof capture: bad option '%s'\n", argv[first]);
        usage(stderr);
        return 2;
    }
    if (first >= argc) {
        usage(stderr);
        return 2;
    }
    run *runs = calloc(MAX_RUNS, sizeof *runs);
    int n = 0, rc = 0;
    if (!runs)
        return 2;
    for (int i = first; i < argc; i++)
        if (collect(argv[i], runs, &n) != 0)
            rc = 2;
    for (int i = 0; rc == 0 && i < n; i++)
        if (read_index(&runs[i], NULL) != 0)
            rc = 2;
    if (rc) {
        free(runs);
        return rc;
    }
    int waiting = 0;
    for (int i = 0; i < n; i++) {
        if (signal_run(&runs[i]) != 0) {
            runs[i].done = -1;
            rc = 1;
        } else {
            waiting++;
        }
    }
    struct timespec tick = {0, 50 * 1000 * 1000};
    for (double waited = 0; waiting > 0 && waited <= timeout; waited += 0.05) {
        for (int i = 0; i < n; i++) {
            run now = runs[i];
            char *text = NULL;
            if (runs[i].done || read_index(&now, &text) != 0)
                continue;
            if (now.entries > runs[i].entries) {
                print_new(&runs[i], text);
                runs[i].done = 1;
                waiting--;
            }
            free(text);
        }
        if (waiting > 0)
            nanosleep(&tick, NULL);
    }
    for (int i = 0; i < n; i++) {
        if (runs[i].done == 0) {
            fprintf(stderr, "trainprof capture: %s: no capture within %.0f s (pid %ld busy, "
                            "profiling.captures_max reached, or SIGUSR1 held by the program)\n",
                    runs[i].dir, timeout, runs[i].pid);
            rc = 1;
        }
    }
    free(runs);
    return rc;
}
