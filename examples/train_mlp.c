/*
 * train_mlp.c - a real (small) training loop instrumented with trainprof.
 *
 * A 32-64-64-10 multilayer perceptron (ReLU, softmax cross-entropy) is
 * trained by minibatch SGD on a synthetic classification set generated in
 * the program (labels from a hidden random linear teacher), so the loss
 * visibly falls. A data-loader thread assembles batches into a bounded
 * queue. Zones: data_batch_production (loader), data_wait, forward,
 * backward, optimizer_step; counters: loss, learning_rate.
 *
 *   train_mlp [--max_steps N] [--batch N] [--epoch_steps N] [--quiet] [--help]
 *             [profiling flags: --profiling.active 3, --enable_profiling True ...]
 *
 * Exit status: 0 done, 1 profiling could not start, 2 bad usage.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlp_kernels.h"
#include "trainprof.h"

enum { IN = 32, H1 = 64, H2 = 64, OUT = 10, NDATA = 8192, QCAP = 4, MAXB = 1024 };

typedef struct batch {
    int n;
    float x[MAXB][IN];
    int y[MAXB];
} batch;

typedef struct loader {
    tp_session *prof;
    const float (*data)[IN];
    const int *labels;
    int batch_size;
    long batches_left;
    batch *slots[QCAP];
    int head, count, stop;
    pthread_mutex_t lock;
    pthread_cond_t not_full, not_empty;
    unsigned seed;
} loader;

typedef struct mlp {
    float w1[H1][IN], b1[H1], w2[H2][H1], b2[H2], w3[OUT][H2], b3[OUT];
} mlp;

typedef struct acts {
    float h1[MAXB][H1], h2[MAXB][H2], p[MAXB][OUT];
} acts;

/* Inputs ~ N(0,1); label = argmax of a hidden random linear teacher. */
static void make_dataset(float (*x)[IN], int *y, unsigned seed)
{
    static float teacher[OUT][IN];
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++)
            teacher[o][i] = gauss(&seed);
    for (int n = 0; n < NDATA; n++) {
        int best = 0;
        float bv = -1e30f;
        for (int i = 0; i < IN; i++)
            x[n][i] = gauss(&seed);
        for (int o = 0; o < OUT; o++) {
            float v = 0;
            for (int i = 0; i < IN; i++)
                v += teacher[o][i] * x[n][i];
            if (v > bv)
                bv = v, best = o;
        }
        y[n] = best;
    }
}

static void *loader_main(void *arg)
{
    loader *L = arg;
    tp_thread_name(L->prof, "data_loader");
    for (;;) {
        pthread_mutex_lock(&L->lock);
        while (L->count == QCAP && !L->stop)
            pthread_cond_wait(&L->not_full, &L->lock);
        int done = L->stop || L->batches_left <= 0;
        if (!done)
            L->batches_left--;
        pthread_mutex_unlock(&L->lock);
        if (done)
            break;
        batch *b = malloc(sizeof *b);
        if (!b)
            break;
        TP_ZONE_BEGIN(L->prof, "data_batch_production");
        b->n = L->batch_size;
        for (int k = 0; k < b->n; k++) {
            int idx = (int)(frand(&L->seed) * NDATA) % NDATA;
            memcpy(b->x[k], L->data[idx], sizeof b->x[k]);
            b->y[k] = L->labels[idx];
        }
        TP_ZONE_END(L->prof);
        pthread_mutex_lock(&L->lock);
        L->slots[(L->head + L->count) % QCAP] = b;
        L->count++;
        pthread_cond_signal(&L->not_empty);
        pthread_mutex_unlock(&L->lock);
    }
    return NULL;
}

static batch *next_batch(loader *L)
{
    pthread_mutex_lock(&L->lock);
    while (L->count == 0)
        pthread_cond_wait(&L->not_empty, &L->lock);
    batch *b = L->slots[L->head];
    L->head = (L->head + 1) % QCAP;
    L->count--;
    pthread_cond_signal(&L->not_full);
    pthread_mutex_unlock(&L->lock);
    return b;
}

static void init_layer(float *w, int fan_out, int fan_in, unsigned *s)
{
    float scale = sqrtf(2.0f / (float)fan_in);
    for (int i = 0; i < fan_out * fan_in; i++)
        w[i] = gauss(s) * scale;
}

static float forward(const mlp *m, const batch *b, acts *a)
{
    float loss = 0;
    dense(b->n, IN, H1, &b->x[0][0], &m->w1[0][0], m->b1, &a->h1[0][0], 1);
    dense(b->n, H1, H2, &a->h1[0][0], &m->w2[0][0], m->b2, &a->h2[0][0], 1);
    dense(b->n, H2, OUT, &a->h2[0][0], &m->w3[0][0], m->b3, &a->p[0][0], 0);
    for (int r = 0; r < b->n; r++) { /* softmax + cross-entropy */
        float mx = a->p[r][0], sum = 0;
        for (int o = 1; o < OUT; o++)
            mx = a->p[r][o] > mx ? a->p[r][o] : mx;
        for (int o = 0; o < OUT; o++)
            sum += (a->p[r][o] = expf(a->p[r][o] - mx));
        for (int o = 0; o < OUT; o++)
            a->p[r][o] /= sum;
        loss -= logf(a->p[r][b->y[r]] + 1e-12f);
    }
    return loss / (float)b->n;
}

static void backward(const mlp *m, const batch *b, acts *a, mlp *g)
{
    static float d3[MAXB][OUT], d2[MAXB][H2], d1[MAXB][H1];
    memset(g, 0, sizeof *g);
    for (int r = 0; r < b->n; r++)
        for (int o = 0; o < OUT; o++)
            d3[r][o] = (a->p[r][o] - (o == b->y[r])) / (float)b->n;
    dense_back(b->n, H2, OUT, &a->h2[0][0], &m->w3[0][0], &d3[0][0], &g->w3[0][0], g->b3, &d2[0][0]);
    dense_back(b->n, H1, H2, &a->h1[0][0], &m->w2[0][0], &d2[0][0], &g->w2[0][0], g->b2, &d1[0][0]);
    dense_back(b->n, IN, H1, &b->x[0][0], &m->w1[0][0], &d1[0][0], &g->w1[0][0], g->b1, NULL);
}

static void sgd(mlp *m, const mlp *g, float lr)
{
    float *p = (float *)m;
    const float *q = (const float *)g;
    for (size_t i = 0; i < sizeof *m / sizeof(float); i++)
        p[i] -= lr * q[i];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void usage(FILE *o)
{
    fprintf(o,
            "usage: train_mlp [options] [profiling flags]\n"
            "Trains a small MLP on synthetic data, profiled by trainprof.\n"
            "\n"
            "options:\n"
            "  --max_steps N     training steps (default 300)\n"
            "  --batch N         samples per batch, 1..%d (default 64)\n"
            "  --epoch_steps N   steps per epoch (default %d / batch)\n"
            "  --quiet           no loss lines\n"
            "  -h, --help        this text\n"
            "\n"
            "profiling flags: --profiling.KEY VALUE or --profiling.KEY=VALUE (e.g.\n"
            "  --profiling.wait 1 --profiling.active 3 --profiling.enabled false), the other\n"
            "  spellings (--enable_profiling True, ...) and TRAINPROF_* variables; every\n"
            "  key is listed in docs/CONFIG.md and by `trainprof config`.\n",
            MAXB, NDATA);
}

typedef struct options {
    long max_steps, batch, epoch_steps;
    int quiet;
} options;

/* Parses a whole-number value of `flag`; -1 with a message when it is not one. */
static int parse_count(const char *flag, const char *v, long *out)
{
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || n < 0) {
        fprintf(stderr, "train_mlp: %s needs a whole number >= 0, got '%s' (see --help)\n", flag,
                v ? v : "");
        return -1;
    }
    *out = n;
    return 0;
}

/* The program's own flags (profiling flags are already consumed): 0 ok,
 * 2 bad usage (message printed). */
static int parse_options(int argc, char **argv, options *o)
{
    static const char *const names[] = {"--max_steps", "--batch", "--epoch_steps"};
    long *dst[] = {&o->max_steps, &o->batch, &o->epoch_steps};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
            continue;
        }
        int k = 0;
        size_t len = 0;
        for (; k < 3; k++) {
            len = strlen(names[k]);
            if (strncmp(a, names[k], len) == 0 && (a[len] == '\0' || a[len] == '='))
                break;
        }
        if (k == 3) {
            fprintf(stderr, "train_mlp: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        const char *v = a[len] == '=' ? a + len + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (parse_count(names[k], v, dst[k]) != 0)
            return 2;
    }
    if (o->batch < 1 || o->batch > MAXB || o->epoch_steps == 0) {
        fprintf(stderr, "train_mlp: --batch must be 1..%d and --epoch_steps >= 1 (see --help)\n",
                MAXB);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    }
    tp_error err;
    tp_config *cfg = tp_config_new();
    if (!cfg || tp_config_load_env(cfg, &err) != 0 || tp_config_parse_args(cfg, &argc, argv, &err) != 0) {
        fprintf(stderr, "train_mlp: %s\n", cfg ? err.message : "out of memory");
        tp_config_free(cfg);
        return 2;
    }
    options opt = {300, 64, -1, 0}; /* epoch_steps -1: NDATA / batch */
    int rc = parse_options(argc, argv, &opt);
    if (rc != 0) {
        tp_config_free(cfg);
        return rc;
    }
    long max_steps = opt.max_steps;
    int bs = (int)opt.batch;
    long epoch_steps = opt.epoch_steps > 0 ? opt.epoch_steps : NDATA / bs;
    int quiet = opt.quiet;
    tp_session *prof = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!prof && err.code != TP_OK) {
        fprintf(stderr, "train_mlp: profiling: %s\n", err.message);
        return 1;
    }
    static float data[NDATA][IN];
    static int labels[NDATA];
    static mlp model, grad;
    static acts act;
    unsigned seed = 42;
    make_dataset(data, labels, 7);
    init_layer(&model.w1[0][0], H1, IN, &seed);
    init_layer(&model.w2[0][0], H2, H1, &seed);
    init_layer(&model.w3[0][0], OUT, H2, &seed);

    loader L = {.prof = prof, .data = (const float (*)[IN])data, .labels = labels,
                .batch_size = bs, .batches_left = max_steps, .seed = 1234};
    pthread_mutex_init(&L.lock, NULL);
    pthread_cond_init(&L.not_full, NULL);
    pthread_cond_init(&L.not_empty, NULL);
    pthread_t th;
    pthread_create(&th, NULL, loader_main, &L);

    float lr0 = 0.1f, first_loss = 0, loss = 0, avg = 0;
    double *step_us = calloc((size_t)max_steps + 1, sizeof *step_us);
    for (long step = 0; step < max_steps; step++) {
        double t0 = now_us();
        float lr = lr0 / (1.0f + (float)step / 2000.0f);
        tp_step_begin(prof);
        batch *b;
        {
            TP_ZONE(prof, "data_wait");
            b = next_batch(&L);
        }
        {
            TP_ZONE(prof, "forward");
            loss = forward(&model, b, &act);
        }
        {
            TP_ZONE(prof, "backward");
            backward(&model, b, &act, &grad);
        }
        {
            TP_ZONE(prof, "optimizer_step");
            sgd(&model, &grad, lr);
        }
        tp_counter(prof, "loss", loss);
        tp_counter(prof, "learning_rate", lr);
        free(b);
        tp_step_end(prof, (uint64_t)bs);
        if (step_us)
            step_us[step] = now_us() - t0;
        if ((step + 1) % epoch_steps == 0)
            tp_epoch_end(prof);
        avg = step == 0 ? loss : 0.95f * avg + 0.05f * loss;
        if (step == 0)
            first_loss = loss;
        if (!quiet && (step % 100 == 0 || step == max_steps - 1))
            printf("step %5ld  loss %.4f  (smoothed %.4f)  lr %.4f\n", step, loss, avg, lr);
    }
    pthread_join(th, NULL);
    if (max_steps > 0) {
        printf("loss: first %.4f -> last smoothed %.4f\n", first_loss, avg);
        if (step_us) {
            qsort(step_us, (size_t)max_steps, sizeof *step_us, cmp_double);
            printf("median step %.2f us, max step %.2f us (measured by the example)\n",
                   step_us[max_steps / 2], step_us[max_steps - 1]);
        }
    }
    free(step_us);
    tp_session_stats st;
    tp_session_get_stats(prof, &st);
    if (tp_session_close(prof, &err) != 0)
        fprintf(stderr, "train_mlp: profiling: %s\n", err.message);
    /* with profiling on, the session's console output ends with
     * "trainprof: results in <dir>" (scripts/run-example.sh looks for it) */
    if (!prof)
        printf("profiling off\n");
    return 0;
}
