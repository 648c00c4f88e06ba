/*
 * train_mlp_mpi.c - data-parallel training with MPI, profiled on every rank.
 *
 * The 32-64-64-10 MLP of train_mlp.c (ReLU, softmax cross-entropy, SGD) on
 * the same kind of synthetic teacher-labelled data. Every rank starts from
 * the same weights, computes gradients on its own shard of each global
 * batch, and the gradients are averaged with MPI_Allreduce (recorded by
 * tp_mpi.h as an "all_reduce" zone with its byte count), so the replicas
 * stay identical: the evaluation loss on a fixed batch, printed every
 * --log_every steps, is the same on every rank. The ranks share one job
 * directory (mpirun's PMIX_NAMESPACE names the job) and align their clocks
 * with tp_session_sync over MPI_Barrier.
 *
 *   mpirun -np 4 train_mlp_mpi [--max_steps N] [--batch N] [--log_every N]
 *          [--slow_rank R --slow_ms M] [profiling flags]
 *
 * --slow_rank R --slow_ms M: rank R computes M ms more per step (a busy
 * loop inside backward), a straggler for `trainprof analyze` to find.
 * Exit status: 0 done, 1 profiling could not start, 2 bad usage.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlp_kernels.h"
#include "tp_mpi.h"
#include "trainprof.h"

enum { IN = 32, H1 = 64, H2 = 64, OUT = 10, NDATA = 8192, MAXB = 256, EVAL = 256 };

typedef struct mlp {
    float w1[H1][IN], b1[H1], w2[H2][H1], b2[H2], w3[OUT][H2], b3[OUT];
} mlp;

typedef struct options {
    long max_steps, batch, log_every, slow_rank, slow_ms;
} options;

static float data[NDATA][IN];
static int labels[NDATA];
static float h1[MAXB][H1], h2[MAXB][H2], p[MAXB][OUT];
static float d3[MAXB][OUT], d2[MAXB][H2], d1[MAXB][H1];

/* Inputs ~ N(0,1); label = argmax of a hidden random linear teacher. The
 * same seed on every rank: every rank holds the whole set. */
static void make_dataset(unsigned seed)
{
    float teacher[OUT][IN];
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++)
            teacher[o][i] = gauss(&seed);
    for (int n = 0; n < NDATA; n++) {
        float best = -1e30f;
        for (int i = 0; i < IN; i++)
            data[n][i] = gauss(&seed);
        for (int o = 0; o < OUT; o++) {
            float v = 0;
            for (int i = 0; i < IN; i++)
                v += teacher[o][i] * data[n][i];
            if (v > best)
                best = v, labels[n] = o;
        }
    }
}

/* Mean cross-entropy of samples first..first+n-1 (n <= MAXB). */
static float forward(const mlp *m, int first, int n)
{
    float loss = 0;
    dense(n, IN, H1, &data[first][0], &m->w1[0][0], m->b1, &h1[0][0], 1);
    dense(n, H1, H2, &h1[0][0], &m->w2[0][0], m->b2, &h2[0][0], 1);
    dense(n, H2, OUT, &h2[0][0], &m->w3[0][0], m->b3, &p[0][0], 0);
    for (int r = 0; r < n; r++) {
        float mx = p[r][0], sum = 0;
        for (int o = 1; o < OUT; o++)
            mx = p[r][o] > mx ? p[r][o] : mx;
        for (int o = 0; o < OUT; o++)
            sum += (p[r][o] = expf(p[r][o] - mx));
        for (int o = 0; o < OUT; o++)
            p[r][o] /= sum;
        loss -= logf(p[r][labels[first + r]] + 1e-12f);
    }
    return loss / (float)n;
}

/* Gradient of the mean loss over `global` samples, from this rank's n. */
static void backward(const mlp *m, int first, int n, int global, mlp *g)
{
    memset(g, 0, sizeof *g);
    for (int r = 0; r < n; r++)
        for (int o = 0; o < OUT; o++)
            d3[r][o] = (p[r][o] - (o == labels[first + r])) / (float)global;
    dense_back(n, H2, OUT, &h2[0][0], &m->w3[0][0], &d3[0][0], &g->w3[0][0], g->b3, &d2[0][0]);
    dense_back(n, H1, H2, &h1[0][0], &m->w2[0][0], &d2[0][0], &g->w2[0][0], g->b2, &d1[0][0]);
    dense_back(n, IN, H1, &data[first][0], &m->w1[0][0], &d1[0][0], &g->w1[0][0], g->b1, NULL);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The straggler's extra compute: arithmetic until ms milliseconds passed. */
static void busy_ms(long ms)
{
    volatile float acc = 1.0f;
    double end = now_ms() + (double)ms;
    while (now_ms() < end)
        for (int i = 0; i < 1000; i++)
            acc = acc * 1.0000001f + 1e-7f;
}

static int parse_options(int argc, char **argv, options *o, int rank)
{
    static const char *const names[] = {"--max_steps", "--batch", "--log_every", "--slow_rank",
                                        "--slow_ms"};
    long *dst[] = {&o->max_steps, &o->batch, &o->log_every, &o->slow_rank, &o->slow_ms};
    for (int i = 1; i < argc; i++) {
        int k = 0;
        for (; k < 5 && strcmp(argv[i], names[k]) != 0; k++)
            ;
        char *end = NULL;
        long v = (k < 5 && i + 1 < argc) ? strtol(argv[++i], &end, 10) : -1;
        if (k == 5 || !end || *end || v < 0) {
            if (rank == 0)
                fprintf(stderr,
                        "train_mlp_mpi: bad option '%s' (options: --max_steps N --batch N "
                        "--log_every N --slow_rank R --slow_ms M, each a whole number)\n",
                        argv[i]);
            return 2;
        }
        *dst[k] = v;
    }
    if (o->batch < 1 || o->batch > MAXB || o->log_every < 1) {
        if (rank == 0)
            fprintf(stderr, "train_mlp_mpi: --batch must be 1..%d, --log_every >= 1\n", MAXB);
        return 2;
    }
    return 0;
}

/* Opens the profiling session; 0, or the exit status after a message. */
static int open_profiling(int *argc, char **argv, tp_session **prof)
{
    tp_error err;
    tp_config *cfg = tp_config_new();
    int ok = cfg && tp_config_load_env(cfg, &err) == 0 &&
             tp_config_parse_args(cfg, argc, argv, &err) == 0;
    if (!ok) {
        fprintf(stderr, "train_mlp_mpi: %s\n", cfg ? err.message : "out of memory");
        tp_config_free(cfg);
        return 2;
    }
    *prof = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!*prof && err.code != TP_OK) {
        fprintf(stderr, "train_mlp_mpi: profiling: %s\n", err.message);
        return 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Returns the median step time in ms, as the program itself measures it. */
static double train(tp_session *prof, const options *o, int rank, int world)
{
    static mlp model, grad;
    unsigned seed = 42;
    float *w[] = {&model.w1[0][0], &model.w2[0][0], &model.w3[0][0]};
    int fan_in[] = {IN, H1, H2}, fan_out[] = {H1, H2, OUT};
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < fan_out[l] * fan_in[l]; i++)
            w[l][i] = gauss(&seed) * sqrtf(2.0f / (float)fan_in[l]);
    int n = (int)o->batch, global = n * world, train_end = NDATA - EVAL;
    double *step_ms = calloc((size_t)o->max_steps + 1, sizeof *step_ms);
    for (long step = 0; step < o->max_steps; step++) {
        double t0 = now_ms();
        int first = (int)((step * global + (long)rank * n) % (train_end - n));
        tp_step_begin(prof);
        {
            TP_ZONE(prof, "forward");
            forward(&model, first, n);
        }
        {
            TP_ZONE(prof, "backward");
            backward(&model, first, n, global, &grad);
            if (rank == o->slow_rank)
                busy_ms(o->slow_ms);
        }
        tp_mpi_allreduce(prof, MPI_IN_PLACE, &grad, (int)(sizeof grad / sizeof(float)), MPI_FLOAT,
                         MPI_SUM, MPI_COMM_WORLD);
        {
            TP_ZONE(prof, "optimizer_step");
            float *pm = (float *)&model, *pg = (float *)&grad;
            for (size_t i = 0; i < sizeof model / sizeof(float); i++)
                pm[i] -= 0.1f * pg[i];
        }
        tp_step_end(prof, (uint64_t)n);
        if (step_ms)
            step_ms[step] = now_ms() - t0;
        if (step % o->log_every == 0 || step == o->max_steps - 1) {
            float eval = forward(&model, train_end, EVAL); /* same batch, same model: every rank */
            tp_counter(prof, "eval_loss", eval);
            printf("rank %d step %4ld eval_loss %.6f\n", rank, step, eval);
            fflush(stdout);
        }
    }
    double median = 0;
    if (step_ms && o->max_steps > 0) {
        qsort(step_ms, (size_t)o->max_steps, sizeof *step_ms, cmp_double);
        median = step_ms[o->max_steps / 2];
    }
    free(step_ms);
    return median;
}

int main(int argc, char **argv)
{
    int rank = 0, world = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    tp_session *prof = NULL;
    int rc = open_profiling(&argc, argv, &prof);
    options o = {40, 32, 10, -1, 0};
    if (rc == 0)
        rc = parse_options(argc, argv, &o, rank);
    /* every rank agrees to go on, so none waits in a collective alone */
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc != 0) {
        tp_session_close(prof, NULL);
        MPI_Finalize();
        return rc;
    }
    make_dataset(7);
    MPI_Comm comm = MPI_COMM_WORLD;
    tp_error err;
    if (tp_session_sync(prof, tp_mpi_barrier, &comm, &err) != 0)
        fprintf(stderr, "train_mlp_mpi: rank %d: clock sync: %s\n", rank, err.message);
    double median = train(prof, &o, rank, world);
    printf("rank %d median_step_ms %.4f\n", rank, median);
    if (tp_session_close(prof, &err) != 0)
        fprintf(stderr, "train_mlp_mpi: rank %d: profiling: %s\n", rank, err.message);
    MPI_Finalize();
    return 0;
}
