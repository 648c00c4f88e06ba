/*
 * train_mlp_cuda.cu - the MLP of examples/train_mlp.c (32-64-64-10, ReLU,
 * softmax cross-entropy, minibatch SGD on a synthetic teacher set) trained
 * on the GPU with hand-written kernels, instrumented with trainprof:
 * CPU zones around batch assembly, GPU zones (CUDA events) around the
 * host->device copy, forward, backward and optimizer on the training
 * stream, the loss as a counter, and CUPTI kernels/copies in the trace
 * windows with --profiling.cuda true.
 *
 *   train_mlp_cuda [--max_steps N] [--batch N] [--pageable] [--loss_every N]
 *                  [--quiet] [profiling flags: --profiling.cuda true ...]
 *
 * --pageable copies minibatches from malloc'ed memory (a staged,
 * synchronous copy) instead of pinned memory (cudaMallocHost, async).
 * Exit status: 0 done, 1 profiling could not start or CUDA failed,
 * 2 bad usage, 77 no CUDA device (the test reports a skip).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainprof.h"

enum { IN = 32, H1 = 64, H2 = 64, OUT = 10, NDATA = 8192, MAXB = 1024 };

#define CUDA_OK(call)                                                                    \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            fprintf(stderr, "train_mlp_cuda: %s failed: %s (%s:%d)\n", #call,            \
                    cudaGetErrorString(e_), __FILE__, __LINE__);                         \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* ---- kernels: one thread per output element --------------------------------------- */

/* y[b][o] = act(sum_i w[o][i] x[b][i] + bias[o]) */
__global__ void linear_forward(const float *x, const float *w, const float *bias, float *y, int n,
                               int in, int out, int relu)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * out)
        return;
    int b = idx / out, o = idx % out;
    float s = bias[o];
    for (int i = 0; i < in; i++)
        s += w[o * in + i] * x[b * in + i];
    y[idx] = relu && s < 0 ? 0 : s;
}

/* softmax in place, dlogits = (p - onehot) / n, loss summed into *loss */
__global__ void softmax_xent(float *logits, const int *labels, float *dlogits, float *loss, int n)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n)
        return;
    float *z = logits + b * OUT, m = z[0], sum = 0;
    for (int k = 1; k < OUT; k++)
        m = fmaxf(m, z[k]);
    for (int k = 0; k < OUT; k++)
        sum += expf(z[k] - m);
    for (int k = 0; k < OUT; k++) {
        float p = expf(z[k] - m) / sum;
        dlogits[b * OUT + k] = (p - (k == labels[b])) / n;
        if (k == labels[b])
            atomicAdd(loss, -logf(fmaxf(p, 1e-12f)) / n);
    }
}

/* dx[b][i] = sum_o dy[b][o] w[o][i], times relu'(x) when x is a ReLU output */
__global__ void linear_backward_input(const float *dy, const float *w, const float *x, float *dx,
                                      int n, int in, int out)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * in)
        return;
    int b = idx / in, i = idx % in;
    float s = 0;
    for (int o = 0; o < out; o++)
        s += dy[b * out + o] * w[o * in + i];
    dx[idx] = x[idx] > 0 ? s : 0;
}

/* dw[o][i] = sum_b dy[b][o] x[b][i]; db[o] = sum_b dy[b][o] */
__global__ void linear_grad(const float *dy, const float *x, float *dw, float *db, int n, int in,
                            int out)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= out * (in + 1))
        return;
    int o = idx / (in + 1), i = idx % (in + 1);
    float s = 0;
    for (int b = 0; b < n; b++)
        s += dy[b * out + o] * (i < in ? x[b * in + i] : 1.0f);
    if (i < in)
        dw[o * in + i] = s;
    else
        db[o] = s;
}

__global__ void sgd_update(float *p, const float *g, int n, float lr)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n)
        p[idx] -= lr * g[idx];
}

/* ---- model ------------------------------------------------------------------------- */

/* Parameters and gradients each in one block: w1 b1 w2 b2 w3 b3. */
enum {
    W1 = 0, B1 = W1 + H1 * IN, W2 = B1 + H1, B2 = W2 + H2 * H1, W3 = B2 + H2, B3 = W3 + OUT * H2,
    NPARAM = B3 + OUT
};

typedef struct gpu_state {
    float *param, *grad;
    float *x, *h1, *h2, *logits, *d3, *d2, *d1, *loss;
    int *y;
} gpu_state;

static unsigned rng = 12345u;
static float frand(void)
{
    rng = rng * 1103515245u + 12345u;
    return (float)((rng >> 8) & 0xffffff) / 16777216.0f;
}

static int blocks(int n) { return (n + 255) / 256; }

static void make_data(float *data, int *labels)
{
    static float teacher[OUT][IN];
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++)
            teacher[o][i] = frand() * 2 - 1;
    for (int d = 0; d < NDATA; d++) {
        float best = -1e30f;
        for (int i = 0; i < IN; i++)
            data[d * IN + i] = frand() * 2 - 1;
        for (int o = 0; o < OUT; o++) {
            float s = 0;
            for (int i = 0; i < IN; i++)
                s += teacher[o][i] * data[d * IN + i];
            if (s > best) {
                best = s;
                labels[d] = o;
            }
        }
    }
}

static void init_params(gpu_state *g)
{
    static float host[NPARAM];
    const int fan_in[3] = {IN, H1, H2}, at[3] = {W1, W2, W3}, size[3] = {H1 * IN, H2 * H1, OUT * H2};
    memset(host, 0, sizeof host);
    for (int l = 0; l < 3; l++)
        for (int k = 0; k < size[l]; k++)
            host[at[l] + k] = (frand() * 2 - 1) * sqrtf(6.0f / fan_in[l]);
    CUDA_OK(cudaMemcpy(g->param, host, sizeof host, cudaMemcpyHostToDevice));
}

static void forward(const gpu_state *g, int n, cudaStream_t st)
{
    linear_forward<<<blocks(n * H1), 256, 0, st>>>(g->x, g->param + W1, g->param + B1, g->h1, n, IN, H1, 1);
    linear_forward<<<blocks(n * H2), 256, 0, st>>>(g->h1, g->param + W2, g->param + B2, g->h2, n, H1, H2, 1);
    linear_forward<<<blocks(n * OUT), 256, 0, st>>>(g->h2, g->param + W3, g->param + B3, g->logits, n, H2, OUT, 0);
    softmax_xent<<<blocks(n), 256, 0, st>>>(g->logits, g->y, g->d3, g->loss, n);
}

static void backward(const gpu_state *g, int n, cudaStream_t st)
{
    linear_grad<<<blocks(OUT * (H2 + 1)), 256, 0, st>>>(g->d3, g->h2, g->grad + W3, g->grad + B3, n, H2, OUT);
    linear_backward_input<<<blocks(n * H2), 256, 0, st>>>(g->d3, g->param + W3, g->h2, g->d2, n, H2, OUT);
    linear_grad<<<blocks(H2 * (H1 + 1)), 256, 0, st>>>(g->d2, g->h1, g->grad + W2, g->grad + B2, n, H1, H2);
    linear_backward_input<<<blocks(n * H1), 256, 0, st>>>(g->d2, g->param + W2, g->h1, g->d1, n, H1, H2);
    linear_grad<<<blocks(H1 * (IN + 1)), 256, 0, st>>>(g->d1, g->x, g->grad + W1, g->grad + B1, n, IN, H1);
}

static void alloc_state(gpu_state *g, int n)
{
    CUDA_OK(cudaMalloc(&g->param, NPARAM * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->grad, NPARAM * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->x, (size_t)n * IN * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->h1, (size_t)n * H1 * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->h2, (size_t)n * H2 * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->logits, (size_t)n * OUT * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->d3, (size_t)n * OUT * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->d2, (size_t)n * H2 * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->d1, (size_t)n * H1 * sizeof(float)));
    CUDA_OK(cudaMalloc(&g->loss, sizeof(float)));
    CUDA_OK(cudaMalloc(&g->y, (size_t)n * sizeof(int)));
}

static void free_state(gpu_state *g)
{
    void *p[] = {g->param, g->grad, g->x, g->h1, g->h2, g->logits, g->d3, g->d2, g->d1, g->loss, g->y};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        cudaFree(p[i]);
}

typedef struct options {
    long max_steps;
    int batch, pageable, loss_every, quiet;
} options;

static int parse_options(int argc, char **argv, options *o)
{
    o->max_steps = 200, o->batch = 256, o->pageable = 0, o->loss_every = 10, o->quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--pageable")) {
            o->pageable = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (i + 1 < argc && !strcmp(a, "--max_steps")) {
            o->max_steps = atol(argv[++i]);
        } else if (i + 1 < argc && !strcmp(a, "--batch")) {
            o->batch = atoi(argv[++i]);
        } else if (i + 1 < argc && !strcmp(a, "--loss_every")) {
            o->loss_every = atoi(argv[++i]);
        } else {
            fprintf(stderr, "train_mlp_cuda: unknown option %s\nusage: train_mlp_cuda "
                            "[--max_steps N] [--batch N] [--pageable] [--loss_every N] [--quiet] "
                            "[--profiling.KEY VALUE ...]\n", a);
            return -1;
        }
    }
    if (o->max_steps < 1 || o->batch < 1 || o->batch > MAXB || o->loss_every < 1) {
        fprintf(stderr, "train_mlp_cuda: --max_steps >= 1, --batch 1..%d, --loss_every >= 1\n", MAXB);
        return -1;
    }
    return 0;
}

/* Host batch buffers: pinned (async copies) or pageable. */
static void host_buffers(const options *o, float **x, int **y)
{
    size_t xb = (size_t)o->batch * IN * sizeof(float), yb = (size_t)o->batch * sizeof(int);
    if (o->pageable) {
        *x = (float *)malloc(xb);
        *y = (int *)malloc(yb);
        if (!*x || !*y)
            exit(1);
    } else {
        CUDA_OK(cudaMallocHost(x, xb));
        CUDA_OK(cudaMallocHost(y, yb));
    }
}

int main(int argc, char **argv)
{
    tp_error err;
    tp_config *cfg = tp_config_new();
    if (!cfg || tp_config_parse_args(cfg, &argc, argv, &err) != 0 ||
        tp_config_load_env(cfg, &err) != 0) {
        fprintf(stderr, "train_mlp_cuda: %s\n", cfg ? err.message : "out of memory");
        return 2;
    }
    options o;
    if (parse_options(argc, argv, &o) != 0)
        return 2;
    int devices = 0;
    cudaError_t ce = cudaGetDeviceCount(&devices);
    if (ce != cudaSuccess || devices == 0) {
        printf("train_mlp_cuda: no CUDA device (%s): skipping\n",
               ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        tp_config_free(cfg);
        return 77;
    }
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!s && err.code != TP_OK) {
        fprintf(stderr, "train_mlp_cuda: %s\n", err.message);
        return 1;
    }
    static float data[NDATA * IN];
    static int labels[NDATA];
    make_data(data, labels);
    gpu_state g;
    alloc_state(&g, o.batch);
    init_params(&g);
    cudaStream_t st;
    CUDA_OK(cudaStreamCreate(&st));
    float *hx, *lossp;
    int *hy;
    host_buffers(&o, &hx, &hy);
    CUDA_OK(cudaMallocHost(&lossp, sizeof(float)));
    const float lr = 0.5f;
    for (long step = 0; step < o.max_steps; step++) {
        tp_step_begin(s);
        {
            TP_ZONE(s, "data_batch_production");
            for (int b = 0; b < o.batch; b++) {
                int d = (int)(frand() * NDATA) % NDATA;
                memcpy(hx + (size_t)b * IN, data + (size_t)d * IN, IN * sizeof(float));
                hy[b] = labels[d];
            }
        }
        {
            TP_GPU_ZONE(s, st, "h2d_copy");
            CUDA_OK(cudaMemcpyAsync(g.x, hx, (size_t)o.batch * IN * sizeof(float),
                                    cudaMemcpyHostToDevice, st));
            CUDA_OK(cudaMemcpyAsync(g.y, hy, (size_t)o.batch * sizeof(int), cudaMemcpyHostToDevice, st));
        }
        {
            TP_GPU_ZONE(s, st, "forward");
            CUDA_OK(cudaMemsetAsync(g.loss, 0, sizeof(float), st));
            forward(&g, o.batch, st);
        }
        {
            TP_GPU_ZONE(s, st, "backward");
            backward(&g, o.batch, st);
        }
        {
            TP_GPU_ZONE(s, st, "optimizer_step");
            sgd_update<<<blocks(NPARAM), 256, 0, st>>>(g.param, g.grad, NPARAM, lr);
        }
        CUDA_OK(cudaGetLastError());
        if ((step + 1) % o.loss_every == 0 || step + 1 == o.max_steps) {
            TP_ZONE(s, "loss_readback"); /* the one synchronization of the loop */
            CUDA_OK(cudaMemcpyAsync(lossp, g.loss, sizeof(float), cudaMemcpyDeviceToHost, st));
            CUDA_OK(cudaStreamSynchronize(st));
            tp_counter(s, "loss", *lossp);
            if (!o.quiet)
                printf("step %ld loss %.4f\n", step + 1, *lossp);
        }
        tp_step_end(s, (uint64_t)o.batch);
    }
    CUDA_OK(cudaStreamSynchronize(st));
    if (s)
        printf("trainprof run directory: %s\n", tp_session_dir(s));
    int rc = tp_session_close(s, &err);
    if (rc != 0)
        fprintf(stderr, "train_mlp_cuda: %s\n", err.message);
    if (o.pageable) {
        free(hx);
        free(hy);
    } else {
        cudaFreeHost(hx);
        cudaFreeHost(hy);
    }
    cudaFreeHost(lossp);
    cudaStreamDestroy(st);
    free_state(&g);
    return rc == 0 ? 0 : 1;
}
