/* test_own_trace.c - the analyzer's engine on trainprof's own traces: a C
 * loop whose step waits on its data loader (zone "data_wait", 3 ms of an
 * 8 ms step) gets the same data_loading finding a PyTorch DataLoader stall
 * gets, and report.html is written at close. Public API for the recording,
 * the analyzer's functions for reading it back. */
#include "analyze/stats/stats.h"
#include "tp_test.h"
#include "trainprof.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char g_dir[] = "/tmp/tp_own_trace_XXXXXX";

static void sleep_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {}
}

/* The first trace file under <run>/profiler_traces, or false. */
static bool find_trace(const char *run, char *out, size_t cap)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/profiler_traces", run);
    DIR *d = opendir(dir);
    if (!d) return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d)))
        if (strstr(e->d_name, ".pt.trace.json")) {
            snprintf(out, cap, "%s/%s", dir, e->d_name);
            found = true;
        }
    closedir(d);
    return found;
}

TP_TEST(c_loop_data_loader_stall)
{
    tp_config *cfg = tp_config_new();
    tp_error err;
    CHECK(tp_config_set(cfg, "log_dir", g_dir, &err) == 0);
    CHECK(tp_config_set(cfg, "metrics", "none", &err) == 0);
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    CHECK(s != NULL);
    if (!s) return;
    char run[1024];
    snprintf(run, sizeof run, "%s", tp_session_dir(s));
    for (int i = 0; i < 8; i++) {
        tp_step_begin(s);
        tp_zone_begin_dyn(s, "data_wait");
        sleep_ms(3);
        tp_zone_end(s);
        tp_zone_begin_dyn(s, "forward");
        sleep_ms(5);
        tp_zone_end(s);
        tp_step_end(s, 32);
    }
    CHECK(tp_session_close(s, &err) == 0);
    char path[1500], html[1100];
    CHECK(find_trace(run, path, sizeof path));
    snprintf(html, sizeof html, "%s/report.html", run);
    CHECK(access(html, R_OK) == 0);
    tpa_diagnosis d;
    tpa_error aerr;
    CHECK(tpa_diagnose_file(path, &d, &aerr) == 0);
    CHECK(d.steps.n == 3 && d.steps.step_source == TPA_STEPS_PROFILER);
    const tpa_finding *dl = NULL;
    for (size_t i = 0; i < d.n_findings; i++)
        if (!strcmp(d.findings[i].id, "data_loading")) dl = &d.findings[i];
    CHECK(dl != NULL);
    if (dl) {
        CHECK(dl->share > 0.2 && dl->share < 0.6);  /* 3 of 8 ms, with sleep slack */
        CHECK_CONTAINS(dl->evidence, "data_wait");
    }
    tpa_diagnosis_free(&d);
}

int main(void)
{
    if (!mkdtemp(g_dir)) return 1;
    RUN(c_loop_data_loader_stall);
    int rc = tp_test_finish();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) rc = 1;
    return rc;
}
