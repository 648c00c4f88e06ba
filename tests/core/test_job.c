/* test_job.c - the ranks of one job: what each launcher's environment
 * says, profiling.ranks, job.json written once, and tp_session_sync over a
 * barrier (ranks = threads of this process, on one host: the offsets must
 * come out within 100 us of zero). */
#include <pthread.h>
#include <stdint.h>

#include "config/settings.h"
#include "core/test_common.h"

static const char *const LAUNCHER_VARS[] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMIX_NAMESPACE",
    "PMIX_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "SLURM_PROCID", "SLURM_LOCALID",
    "SLURM_NTASKS", "SLURM_JOB_ID", "SLURM_STEP_ID", NULL};

static void clear_launcher_env(void)
{
    for (int i = 0; LAUNCHER_VARS[i]; i++)
        unsetenv(LAUNCHER_VARS[i]);
}

static void detect(tpi_job_info *job)
{
    tpi_settings s;
    tpi_settings_defaults(&s);
    tpi_job_detect(&s, job);
}

TP_TEST(launchers)
{
    tpi_job_info j;
    clear_launcher_env();
    detect(&j);
    CHECK_EQ_INT(j.rank, -1);
    CHECK_STR(j.job_id, "");
    CHECK_STR(j.launcher, "");

    setenv("OMPI_COMM_WORLD_RANK", "3", 1); /* mpirun (Open MPI, PMIx) */
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("PMIX_NAMESPACE", "prterun-host-123@1", 1);
    detect(&j);
    CHECK_EQ_INT(j.rank, 3);
    CHECK_EQ_INT(j.local_rank, 1);
    CHECK_EQ_INT(j.world_size, 8);
    CHECK_STR(j.launcher, "openmpi");
    CHECK_STR(j.job_id, "prterun-host-123_1");
    clear_launcher_env();

    setenv("PMIX_RANK", "0", 1); /* an MPI singleton (MPI_Init outside mpirun): no rank */
    setenv("PMIX_NAMESPACE", "singleton-1", 1);
    detect(&j);
    CHECK_EQ_INT(j.rank, -1);
    clear_launcher_env();

    setenv("RANK", "5", 1); /* torchrun */
    setenv("LOCAL_RANK", "1", 1);
    setenv("WORLD_SIZE", "16", 1);
    setenv("TORCHELASTIC_RUN_ID", "exp7", 1);
    setenv("SLURM_JOB_ID", "999", 1); /* torchrun inside SLURM: torchrun's numbers win */
    setenv("SLURM_PROCID", "0", 1);
    detect(&j);
    CHECK_EQ_INT(j.rank, 5);
    CHECK_EQ_INT(j.local_rank, 1);
    CHECK_EQ_INT(j.world_size, 16);
    CHECK_STR(j.launcher, "torchrun");
    CHECK_STR(j.job_id, "exp7");
    clear_launcher_env();

    setenv("SLURM_PROCID", "2", 1); /* srun */
    setenv("SLURM_LOCALID", "0", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    detect(&j);
    CHECK_EQ_INT(j.rank, 2);
    CHECK_EQ_INT(j.world_size, 4);
    CHECK_STR(j.launcher, "slurm");
    CHECK_STR(j.job_id, "4242.0");
    clear_launcher_env();

    setenv("PMI_RANK", "1", 1); /* MPICH hydra: no job id */
    setenv("PMI_SIZE", "2", 1);
    setenv("MPI_LOCALRANKID", "1", 1);
    detect(&j);
    CHECK_EQ_INT(j.rank, 1);
    CHECK_EQ_INT(j.local_rank, 1);
    CHECK_EQ_INT(j.world_size, 2);
    CHECK_STR(j.launcher, "mpich");
    CHECK_STR(j.job_id, "");
    tpi_settings s; /* profiling.job_id names it */
    tpi_settings_defaults(&s);
    snprintf(s.job_id, sizeof s.job_id, "my run/1");
    tpi_job_detect(&s, &j);
    CHECK_STR(j.job_id, "my_run_1");
    clear_launcher_env();
}

TP_TEST(ranks_lists)
{
    int sel = -1;
    CHECK_EQ_INT(tpi_ranks_select("all", 7, &sel), 0);
    CHECK_EQ_INT(sel, 1);
    CHECK_EQ_INT(tpi_ranks_select("0,3,8-15", 3, &sel), 0);
    CHECK_EQ_INT(sel, 1);
    CHECK_EQ_INT(tpi_ranks_select("0,3,8-15", 12, &sel), 0);
    CHECK_EQ_INT(sel, 1);
    CHECK_EQ_INT(tpi_ranks_select("0,3,8-15", 4, &sel), 0);
    CHECK_EQ_INT(sel, 0);
    CHECK_EQ_INT(tpi_ranks_select("0, 3", -1, &sel), 0); /* unknown rank = rank 0 */
    CHECK_EQ_INT(sel, 1);
    static const char *const bad[] = {"", "x", "3-1", "1,", ",1", "1-", "-1", "1;2", NULL};
    for (int i = 0; bad[i]; i++)
        CHECK_EQ_INT(tpi_ranks_select(bad[i], 0, &sel), -1);
    tp_config *cfg = tp_config_new();
    tp_error err;
    CHECK_EQ_INT(tp_config_set(cfg, "profiling.ranks", "0,x", &err), TP_ERR_BAD_VALUE);
    CHECK(strstr(err.message, "profiling.ranks") != NULL);
    CHECK_EQ_INT(tp_config_set(cfg, "ranks", "0,2-3", &err), 0);
    CHECK_STR(tp_config_get(cfg, "ranks"), "0,2-3");
    tp_config_free(cfg);
}

TP_TEST(unlisted_rank_writes_nothing)
{
    clear_launcher_env();
    static const char *const kv[] = {"rank", "2", "job_id", "j", "ranks", "0,1", NULL};
    tp_config *cfg = test_config("job_off", kv);
    tp_error err;
    tp_session *s = tp_session_open(cfg, &err);
    CHECK(s == NULL);
    CHECK_EQ_INT(err.code, TP_OK);
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/tp_core_job_off_%d", (int)getpid());
    CHECK(access(dir, F_OK) != 0); /* not even the log directory */
    tp_config_free(cfg);
}

/* ---- ranks as threads --------------------------------------------------- */

enum { NRANKS = 4 };

typedef struct rank_thread {
    int rank;
    pthread_barrier_t *barrier;
    int open_ok, sync_rc, synced;
    int64_t offset;
    uint64_t error;
    char dir[1100];
} rank_thread;

static int thread_barrier(void *user)
{
    pthread_barrier_wait(user);
    return 0;
}

static void *rank_main(void *arg)
{
    rank_thread *t = arg;
    char rank[16];
    snprintf(rank, sizeof rank, "%d", t->rank);
    const char *const kv[] = {"rank", rank, "job_id", "threads", "memory", "false", "trace", "true",
                              "metrics", "none", NULL};
    tp_config *cfg = test_config("job", kv);
    tp_error err;
    pthread_barrier_wait(t->barrier); /* every thread has built its config */
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    t->open_ok = s != NULL;
    if (s)
        snprintf(t->dir, sizeof t->dir, "%s", tp_session_dir(s));
    t->sync_rc = tp_session_sync(s, thread_barrier, t->barrier, &err);
    if (t->sync_rc)
        fprintf(stderr, "rank %d: %s\n", t->rank, err.message);
    t->synced = tp_session_clock_offset(s, &t->offset, &t->error);
    for (int i = 0; i < 3; i++) {
        tp_step_begin(s);
        tp_step_end(s, 1);
    }
    tp_session_close(s, NULL);
    return NULL;
}

TP_TEST(sync_across_threads)
{
    clear_launcher_env();
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, NRANKS);
    rank_thread t[NRANKS];
    pthread_t th[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        memset(&t[r], 0, sizeof t[r]);
        t[r].rank = r;
        t[r].barrier = &barrier;
        pthread_create(&th[r], NULL, rank_main, &t[r]);
    }
    for (int r = 0; r < NRANKS; r++)
        pthread_join(th[r], NULL);
    pthread_barrier_destroy(&barrier);
    char job_dir[1100] = "";
    for (int r = 0; r < NRANKS; r++) {
        CHECK(t[r].open_ok);
        CHECK_EQ_INT(t[r].sync_rc, 0);
        CHECK_EQ_INT(t[r].synced, 1);
        /* one clock: the true offset is 0, within the bound, and the bound small */
        CHECK((uint64_t)llabs(t[r].offset) <= t[r].error);
        CHECK(llabs(t[r].offset) < 100000);
        char want[64];
        snprintf(want, sizeof want, "/rank%d", r);
        CHECK(strstr(t[r].dir, want) != NULL);
        char *clock = read_in(t[r].dir, "clock.json");
        CHECK(clock && strstr(clock, "\"offset_ns\""));
        CHECK(clock && (r == 0 || strstr(clock, "\"method\": \"same_host\"")));
        free(clock);
        char *summary = read_in(t[r].dir, "training_summary.json");
        CHECK(summary && strstr(summary, "\"clock_offset_ns\"") && strstr(summary, "\"job_id\": \"threads\""));
        free(summary);
        if (r == 0)
            snprintf(job_dir, sizeof job_dir, "%.*s", (int)(strrchr(t[r].dir, '/') - t[r].dir), t[r].dir);
    }
    char *job = read_in(job_dir, "job.json");
    CHECK(job && strstr(job, "\"job_id\": \"threads\"") && strstr(job, "\"clock_offsets_ns\""));
    CHECK(job && strstr(job, "\"3\":"));
    free(job);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", job_dir);
    CHECK_EQ_INT(system(cmd), 0);
    rm_rf(job_dir);
}

static int failing_barrier(void *user)
{
    int *calls = user;
    return ++*calls == 3 ? -1 : 0;
}

static int counting_barrier(void *user)
{
    ++*(int *)user;
    return 0;
}

TP_TEST(sync_contract)
{
    tp_error err;
    int calls = 0;
    /* a NULL session (profiling off on this rank) still takes part */
    CHECK_EQ_INT(tp_session_sync(NULL, counting_barrier, &calls, &err), 0);
    CHECK_EQ_INT(calls, 34);
    CHECK_EQ_INT(tp_session_sync(NULL, NULL, NULL, &err), TP_ERR_INVALID);
    calls = 0;
    CHECK_EQ_INT(tp_session_sync(NULL, failing_barrier, &calls, &err), TP_ERR_IO);
    CHECK_EQ_INT(calls, 3); /* no barrier after the failing one */
    CHECK(strstr(err.message, "barrier") != NULL);
    /* a rank with no job directory: told how to get one */
    clear_launcher_env();
    static const char *const kv[] = {"rank", "1", "memory", "false", "metrics", "none", NULL};
    char dir[1100];
    tp_session *s = open_test_session("job_nojob", kv, dir, sizeof dir);
    calls = 0;
    CHECK_EQ_INT(tp_session_sync(s, counting_barrier, &calls, &err), TP_ERR_STATE);
    CHECK(strstr(err.message, "profiling.job_id") != NULL);
    CHECK_EQ_INT(calls, 34);
    CHECK_EQ_INT(tp_session_clock_offset(s, NULL, NULL), 0);
    tp_session_close(s, NULL);
    rm_rf(dir);
}

int main(void)
{
    RUN(launchers);
    RUN(ranks_lists);
    RUN(unlisted_rank_writes_nothing);
    RUN(sync_across_threads);
    RUN(sync_contract);
    return tp_test_finish();
}
