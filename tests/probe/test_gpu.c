/* GPU probes through the fake NVML and CUDA runtime, and the allocator
 * callback's validation. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe/probe_internal.h"
#include "tp_test.h"

#define GIB (1ull << 30)

static tpi_mem_sample s;

static void env(const char *k, const char *v)
{
    if (v)
        setenv(k, v, 1);
    else
        unsetenv(k);
}

/* Opens the probes, checks which GPU probe answered, takes one sample. */
static tpi_probe_set *open_sampled(const char *gpu_probe)
{
    tpi_probe_set *p = tpi_probes_open(NULL, NULL);
    CHECK_CONTAINS(tpi_probes_describe(p), gpu_probe);
    CHECK_EQ_INT(tpi_probes_sample(p, &s), 0);
    return p;
}

TP_TEST(nvml_devices)
{
    env("TRAINPROF_NVML_LIB", FAKE_NVML);
    env("FAKE_NVML_FAIL", NULL);
    env("FAKE_NVML_USED", "2147483648");
    env("FAKE_NVML_GROWTH", "1048576");
    env("FAKE_NVML_PROC_USED", "1073741824");
    tpi_probe_set *p = open_sampled("nvml");
    CHECK_EQ_INT(s.n_devices, 2);
    CHECK_STR(s.devices[0].mem.device, "cuda:0");
    CHECK_STR(s.devices[1].mem.device, "cuda:1");
    CHECK_STR(s.devices[0].source, "nvml");
    CHECK_EQ_INT(s.devices[0].mem.allocated_bytes, 2 * GIB);
    CHECK_EQ_INT(s.devices[0].mem.total_bytes, 80 * GIB);
    CHECK(s.devices[0].have_utilization);
    CHECK_NEAR(s.devices[0].utilization_percent, 42, 1e-9);
    CHECK(s.devices[0].have_process_used);
    CHECK_EQ_INT(s.devices[0].process_used_bytes, GIB); /* only our pid counted */
    tpi_probes_sample(p, &s);                           /* memory grows each query */
    CHECK(s.devices[0].mem.allocated_bytes > 2 * GIB);
    CHECK_EQ_INT(s.devices[0].mem.peak_bytes, s.devices[0].mem.allocated_bytes);
    tpi_probes_close(p);
    env("FAKE_NVML_GROWTH", NULL);
}

TP_TEST(nvml_failing)
{
    env("TRAINPROF_NVML_LIB", FAKE_NVML);
    env("TRAINPROF_CUDART_LIB", "/nonexistent/libcudart.so");
    env("FAKE_NVML_FAIL", "init");
    tpi_probe_set *p = tpi_probes_open(NULL, NULL);
    CHECK_EQ_INT(tpi_probes_sample(p, &s), 0);
    CHECK_EQ_INT(s.n_devices, 0);
    CHECK(s.have_process);
    tpi_probes_close(p);
    env("FAKE_NVML_FAIL", "count");
    p = tpi_probes_open(NULL, NULL);
    CHECK_EQ_INT(tpi_probes_sample(p, &s), 0);
    CHECK_EQ_INT(s.n_devices, 0);
    tpi_probes_close(p);
    env("FAKE_NVML_FAIL", "memory"); /* opens fine, every query fails */
    p = tpi_probes_open(NULL, NULL);
    CHECK_EQ_INT(tpi_probes_sample(p, &s), 0);
    CHECK_EQ_INT(s.n_devices, 0);
    CHECK(s.probe_errors >= 1);
    CHECK(s.have_process); /* the other probes go on */
    tpi_probes_close(p);
    env("FAKE_NVML_FAIL", NULL);
}

TP_TEST(cudart_fallback)
{
    env("TRAINPROF_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    env("TRAINPROF_CUDART_LIB", FAKE_CUDART);
    env("FAKE_CUDA_DEVICE", "3");
    tpi_probe_set *p = open_sampled("cudart");
    CHECK_EQ_INT(s.n_devices, 1);
    CHECK_STR(s.devices[0].mem.device, "cuda:3");
    CHECK_STR(s.devices[0].source, "cudart");
    CHECK_EQ_INT(s.devices[0].mem.allocated_bytes, 4 * GIB);
    CHECK_EQ_INT(s.devices[0].mem.total_bytes, 16 * GIB);
    env("FAKE_CUDA_FAIL", "1");
    CHECK_EQ_INT(tpi_probes_sample(p, &s), 0);
    CHECK_EQ_INT(s.n_devices, 0);
    CHECK(s.probe_errors >= 1);
    tpi_probes_close(p);
    env("FAKE_CUDA_FAIL", NULL);
    env("TRAINPROF_CUDART_LIB", NULL);
}

TP_TEST(no_gpu_at_all)
{
    env("TRAINPROF_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    tpi_probe_set *p = tpi_probes_open(NULL, NULL);
    CHECK_STR(tpi_probes_describe(p), "process,system");
    CHECK_EQ_INT(tpi_probes_sample(p, &s), 0);
    CHECK_EQ_INT(s.n_devices, 0);
    CHECK_EQ_INT(s.probe_errors, 0);
    tpi_probes_close(p);
}

static int cb_mode;
static int callback(void *user, tp_device_memory *out, int max)
{
    (void)user;
    switch (cb_mode) {
    case 0: /* a good caching-allocator view of cuda:0 */
        strcpy(out[0].device, "cuda:0");
        out[0].allocated_bytes = 3 * GIB;
        out[0].reserved_bytes = 5 * GIB;
        out[0].peak_bytes = 4 * GIB;
        return 1;
    case 1: /* allocated > reserved */
        strcpy(out[0].device, "cuda:0");
        out[0].allocated_bytes = 9 * GIB;
        out[0].reserved_bytes = GIB;
        strcpy(out[1].device, "tpu:0");
        out[1].allocated_bytes = GIB;
        return 2;
    case 2:
        return -5;
    case 3:
        return max + 10;
    case 4: /* no terminating NUL, and an absurd value */
        memset(out[0].device, 'x', sizeof out[0].device);
        strcpy(out[1].device, "cuda:1");
        out[1].allocated_bytes = ~0ull;
        return 2;
    }
    return 0;
}

TP_TEST(callback_merge_and_garbage)
{
    env("TRAINPROF_NVML_LIB", FAKE_NVML);
    tpi_probe_set *p = tpi_probes_open(NULL, NULL);
    tpi_probes_set_callback(p, callback, NULL);
    cb_mode = 0;
    tpi_probes_sample(p, &s);
    CHECK_EQ_INT(s.n_devices, 2);
    CHECK_STR(s.devices[0].source, "callback");
    CHECK_EQ_INT(s.devices[0].mem.allocated_bytes, 3 * GIB);
    CHECK_EQ_INT(s.devices[0].mem.reserved_bytes, 5 * GIB);
    CHECK_EQ_INT(s.devices[0].mem.peak_bytes, 4 * GIB);
    CHECK_EQ_INT(s.devices[0].mem.total_bytes, 80 * GIB); /* from NVML */
    CHECK(s.devices[0].have_utilization);                 /* NVML's kept */
    CHECK_EQ_INT(s.callback_rejected, 0);
    cb_mode = 1;
    tpi_probes_sample(p, &s);
    CHECK_EQ_INT(s.callback_rejected, 1);
    CHECK_STR(s.devices[0].source, "nvml"); /* bad entry dropped */
    CHECK_EQ_INT(s.n_devices, 3);           /* good tpu:0 kept */
    CHECK_STR(s.devices[2].mem.device, "tpu:0");
    cb_mode = 2;
    tpi_probes_sample(p, &s);
    CHECK_EQ_INT(s.callback_rejected, 2);
    cb_mode = 3;
    tpi_probes_sample(p, &s);
    CHECK_EQ_INT(s.callback_rejected, 3);
    cb_mode = 4;
    tpi_probes_sample(p, &s);
    CHECK_EQ_INT(s.callback_rejected, 5);
    CHECK_EQ_INT(s.n_devices, 2);
    CHECK(s.have_process);
    tpi_probes_set_callback(p, NULL, NULL);
    tpi_probes_sample(p, &s);
    CHECK_EQ_INT(s.callback_rejected, 5);
    tpi_probes_close(p);
}

TP_TEST(monitor_gpus)
{
    env("TRAINPROF_NVML_LIB", FAKE_NVML);
    env("FAKE_NVML_PROC_USED", "1073741824");
    tp_monitor *m = tp_monitor_new((int)getpid(), NULL);
    tp_proc_sample ps;
    tp_monitor_sample(m, &ps, NULL);
    tp_device_memory g[4];
    CHECK_EQ_INT(tp_monitor_gpus(m, g, 4), 2);
    CHECK_EQ_INT(g[0].allocated_bytes, GIB);
    CHECK_EQ_INT(g[0].reserved_bytes, 2 * GIB);
    CHECK_EQ_INT(g[0].total_bytes, 80 * GIB);
    CHECK_EQ_INT(tp_monitor_gpus(m, g, 1), 1);
    tp_monitor_free(m);
    env("TRAINPROF_NVML_LIB", "/nonexistent/x.so");
    m = tp_monitor_new((int)getpid(), NULL);
    CHECK_EQ_INT(tp_monitor_gpus(m, g, 4), 0);
    tp_monitor_free(m);
}

/* A forked child (a launcher forking its workers after opening the
 * session) asks NVML about its own pid, not the parent's. */
TP_TEST(nvml_process_used_after_fork)
{
    env("TRAINPROF_NVML_LIB", FAKE_NVML);
    env("FAKE_NVML_FAIL", NULL);
    env("FAKE_NVML_USED", "2147483648");
    env("FAKE_NVML_PROC_USED", "1073741824");
    tpi_probe_set *p = open_sampled("nvml");
    pid_t c = fork();
    if (c == 0) {
        tpi_probes_sample(p, &s);
        _exit(s.n_devices > 0 && s.devices[0].have_process_used &&
                      s.devices[0].process_used_bytes == GIB
                  ? 0
                  : 1);
    }
    int status = -1;
    waitpid(c, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    tpi_probes_close(p);
    env("FAKE_NVML_PROC_USED", NULL);
}

int main(void)
{
    RUN(nvml_devices);
    RUN(nvml_process_used_after_fork);
    RUN(nvml_failing);
    RUN(cudart_fallback);
    RUN(no_gpu_at_all);
    RUN(callback_merge_and_garbage);
    RUN(monitor_gpus);
    return tp_test_finish();
}
