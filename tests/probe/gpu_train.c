/*
 * gpu_train.c - a training loop on a simulated GPU, for tests: the fake
 * libcupti (TRAINPROF_CUPTI_LIB) "runs" the kernels, copies, sets and
 * synchronizations this program issues, and the fake libcudart
 * (TRAINPROF_CUDART_LIB) times the GPU zones. The CPU side is real
 * (sleeps stand for launch overhead and waiting), so the trace's GPU idle,
 * launch-bound and synchronization findings follow from what is issued.
 *
 *   gpu_train LOG_DIR STEPS [key=value ...]   (profiling keys)
 * GPU_TRAIN_BURST=N adds N tiny kernels to every step (buffer-bound tests).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainprof.h"

#define STREAM 7
#define KERNELS 6            /* per forward and per backward */
#define LAUNCH_US 150        /* CPU time per launch: the GPU waits for the CPU */
#define KERNEL_US 40

typedef uint32_t (*kernel_fn)(const char *, uint32_t, uint64_t, uint64_t, uint64_t, uint64_t *);
typedef uint32_t (*memcpy_fn)(unsigned, unsigned, unsigned, uint64_t, uint32_t, uint64_t);
typedef uint32_t (*memset_fn)(uint64_t, uint32_t, uint64_t);
typedef uint32_t (*sync_fn)(uint32_t, uint64_t);

static kernel_fn kernel;
static memcpy_fn copy;
static memset_fn set;
static sync_fn sync_stream;

static void spin_us(long us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static int load_fake(void)
{
    const char *path = getenv("TRAINPROF_CUPTI_LIB");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib) {
        fprintf(stderr, "gpu_train: TRAINPROF_CUPTI_LIB must name the fake libcupti\n");
        return -1;
    }
    *(void **)&kernel = dlsym(lib, "fake_cupti_kernel");
    *(void **)&copy = dlsym(lib, "fake_cupti_memcpy");
    *(void **)&set = dlsym(lib, "fake_cupti_memset");
    *(void **)&sync_stream = dlsym(lib, "fake_cupti_stream_sync");
    return kernel && copy && set && sync_stream ? 0 : -1;
}

static void layer_pass(const char *kname)
{
    for (int k = 0; k < KERNELS; k++) {
        kernel(kname, STREAM, LAUNCH_US * 1000 / 2, 5000, KERNEL_US * 1000, NULL);
        spin_us(LAUNCH_US);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || load_fake() != 0) {
        fprintf(stderr, "usage: gpu_train LOG_DIR STEPS [key=value ...]\n");
        return 2;
    }
    tp_error err;
    tp_config *cfg = tp_config_new();
    int steps = atoi(argv[2]);
    const char *burst_env = getenv("GPU_TRAIN_BURST");
    int burst = burst_env ? atoi(burst_env) : 0;
    const char *defaults[][2] = {{"log_dir", argv[1]}, {"name", "gpu"}, {"wait", "1"}, {"warmup", "3"}, {"active", "3"},
                                 {"metrics", "none"}, {"trace_format", "both"}};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        tp_config_set(cfg, defaults[i][0], defaults[i][1], NULL);
    for (int i = 3; i < argc; i++) {
        char key[128];
        const char *eq = strchr(argv[i], '=');
        if (!eq || (size_t)(eq - argv[i]) >= sizeof key)
            return 2;
        snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
        if (tp_config_set(cfg, key, eq + 1, &err) != 0) {
            fprintf(stderr, "gpu_train: %s\n", err.message);
            return 2;
        }
    }
    tp_session *s = tp_session_open(cfg, &err);
    tp_config_free(cfg);
    if (!s) {
        fprintf(stderr, "gpu_train: %s\n", err.message);
        return 1;
    }
    for (int step = 0; step < steps; step++) {
        tp_step_begin(s);
        {
            TP_ZONE(s, "data_batch_production");
            copy(1, 1, 3, 4u << 20, STREAM, 300000); /* pageable HtoD */
            spin_us(400);
        }
        {
            TP_GPU_ZONE(s, (void *)(uintptr_t)STREAM, "forward");
            layer_pass("_Z10mlp_linearPKfS0_Pfiii");
        }
        {
            TP_GPU_ZONE(s, (void *)(uintptr_t)STREAM, "backward");
            layer_pass("_Z15mlp_linear_gradPKfS0_Pfiii");
        }
        {
            TP_ZONE(s, "optimizer");
            set(1u << 20, STREAM, 20000);
            kernel("sgd_update", STREAM, 20000, 5000, 30000, NULL);
            sync_stream(STREAM, 5000000);
            spin_us(5000); /* the CPU waits for the GPU */
        }
        for (int i = 0; i < burst; i++)
            kernel("tiny", STREAM, 100, 100, 100, NULL);
        tp_counter(s, "loss", 1.0 / (step + 1));
        tp_step_end(s, 64);
    }
    printf("%s\n", tp_session_dir(s));
    return tp_session_close(s, &err) == 0 ? 0 : 1;
}
