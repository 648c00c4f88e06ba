/* test_ranks.c - the cross-rank reduce on summaries built here: the
 * straggler and its lead, the others' wait, missing and duplicate ranks,
 * ranks of another job; and a summary survives JSON and back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "analyze/text/render.h"
#include "tp_test.h"

enum { WORLD = 4, STEPS = 10 };
#define MS 1000000LL

/* A synchronous job: every rank computes 5 ms (+ slow_ms on slow), then
 * waits in the all-reduce until the slowest arrives, then 1 ms of transfer. */
static void make_rank(tpa_rank_summary *s, int rank, int slow, int64_t slow_ms, const char *job)
{
    memset(s, 0, sizeof *s);
    s->rank = rank;
    s->world_size = WORLD;
    snprintf(s->job_id, sizeof s->job_id, "%s", job);
    snprintf(s->format, sizeof s->format, "trainprof");
    snprintf(s->source, sizeof s->source, "job/rank%d", rank);
    s->has_base = s->synced = true;
    s->steps = calloc(STEPS, sizeof *s->steps);
    s->n_steps = STEPS;
    for (int k = 0; k < STEPS; k++) {
        int64_t compute = 5 * MS + rank * 10000 + (rank == slow ? slow_ms * MS : 0);
        int64_t step = 5 * MS + slow_ms * MS + 1 * MS + WORLD * 10000;
        s->steps[k] = (tpa_rank_step){k, 1000 * MS + k * step, step, step - compute, 0, 27688};
    }
    s->n_comm = 1;
    snprintf(s->comm[0].name, sizeof s->comm[0].name, "all_reduce");
}

static tpa_ranks *job_with(int slow, int64_t slow_ms, const int *ranks, int n, const char *other_job)
{
    tpa_ranks *r = tpa_ranks_new();
    for (int i = 0; i < n; i++) {
        tpa_rank_summary s;
        make_rank(&s, ranks[i], slow, slow_ms, other_job && ranks[i] == 3 ? other_job : "j1");
        tpa_ranks_add(r, &s);
        tpa_rank_summary_free(&s);
    }
    return r;
}

static char *render(tpa_ranks *r, bool json)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (json) tpa_ranks_render_json(r, f);
    else tpa_ranks_render_text(r, f, false);
    fclose(f);
    return text;
}

TP_TEST(straggler_and_wait)
{
    static const int all[] = {0, 1, 2, 3};
    tpa_ranks *r = job_with(2, 30, all, 4, NULL);
    tpa_job_stats st;
    tpa_ranks_job_stats(r, &st);
    CHECK_EQ_INT(st.ranks, 4);
    CHECK_EQ_INT(st.straggler_rank, 2);
    CHECK_NEAR(st.straggler_share, 1.0, 1e-9);
    /* lead: rank 2's compute minus the mean of the others' */
    CHECK_NEAR((double)st.straggler_lead_ns, 30 * MS + 20000 - (0 + 10000 + 30000) / 3.0, 1);
    /* the others wait for the straggler: ~30 ms each */
    CHECK_NEAR((double)st.others_wait_ns / MS, 30.0, 0.1);
    char *text = render(r, false);
    CHECK(strstr(text, "rank 2 is the slowest in 100% of steps") != NULL);
    CHECK(strstr(text, "warnings") == NULL);
    free(text);
    tpa_ranks_free(r);
}

TP_TEST(no_straggler_when_balanced)
{
    static const int all[] = {0, 1, 2, 3};
    tpa_ranks *r = job_with(-1, 0, all, 4, NULL);
    char *json = render(r, true);
    CHECK(strstr(json, "\"persistent\":false") != NULL);
    free(json);
    tpa_ranks_free(r);
}

TP_TEST(bad_jobs_are_named)
{
    static const int some[] = {0, 2, 3, 2};
    tpa_ranks *r = job_with(2, 30, some, 4, "j2");
    char *text = render(r, false);
    CHECK(strstr(text, "missing rank 1 (world size 4, 3 ranks found)") != NULL);
    CHECK(strstr(text, "two inputs claim rank 2; the second, job/rank2, is skipped") != NULL);
    CHECK(strstr(text, "rank 3 (job/rank3) belongs to job j2, not j1") != NULL);
    CHECK(strstr(text, "rank 2 is the slowest") != NULL); /* and the analysis of what is there */
    free(text);
    tpa_ranks_free(r);
}

TP_TEST(summary_round_trip)
{
    tpa_rank_summary s, back;
    tpa_error err;
    make_rank(&s, 1, 1, 7, "job \"quoted\"");
    s.truncated = true;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpa_rank_summary_write(f, &s);
    fclose(f);
    CHECK(len < 4096); /* a few KB at most for 10 steps */
    CHECK_EQ_INT(tpa_rank_summary_parse(text, len, &back, &err), 0);
    CHECK_EQ_INT(back.rank, 1);
    CHECK_STR(back.job_id, "job \"quoted\"");
    CHECK(back.truncated && back.synced && !back.device_comm);
    CHECK_EQ_INT(back.n_steps, STEPS);
    CHECK(memcmp(back.steps, s.steps, STEPS * sizeof *s.steps) == 0);
    CHECK_STR(back.comm[0].name, "all_reduce");
    tpa_rank_summary_free(&back);
    /* a cut summary: an error with the byte offset, nothing leaked */
    CHECK_EQ_INT(tpa_rank_summary_parse(text, len / 2, &back, &err), -1);
    CHECK(err.offset > 0 && err.offset <= len / 2);
    CHECK_EQ_INT(tpa_rank_summary_parse("{\"rank\":1}", 10, &back, &err), -1);
    CHECK(strstr(err.msg, "not a rank summary") != NULL);
    free(text);
    tpa_rank_summary_free(&s);
}

int main(void)
{
    RUN(straggler_and_wait);
    RUN(no_straggler_when_balanced);
    RUN(bad_jobs_are_named);
    RUN(summary_round_trip);
    return tp_test_finish();
}
