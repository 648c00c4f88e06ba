"""GPU activity end to end, on the fake libcupti/libcudart/NVML: a training
loop (gpu_train.c) writes a trace; Python's json checks the kernels, copies,
sets, syncs, API calls and ac2g flows as Kineto lays them out; the analyzer
CLI (`trainprof steps` / `analyze`) reads GPU idle, kernel and copy shares,
launch-bound and synchronization findings from it; CUPTI failures, the
offset clock and the buffer bound behave as documented.

usage: test_gpu_trace.py GPU_TRAIN FAKE_CUPTI FAKE_CUDART FAKE_NVML
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

TRAIN, CUPTI, CUDART, NVML = sys.argv[1:5]
CLI = os.environ["TRAINPROF_BIN"]
STEPS, ACTIVE = 8, 3
KERNELS_PER_STEP = 13          # 6 forward + 6 backward + sgd_update
LAUNCH_TO_KERNEL_US = 80.0     # launch call 75 us + 5 us gap, as gpu_train issues them
SGD_LAUNCH_TO_KERNEL_US = 25.0 # sgd_update: 20 us + 5 us
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(tmp, *keys, env_extra=None):
    env = dict(os.environ, TRAINPROF_CUPTI_LIB=CUPTI, TRAINPROF_CUDART_LIB=CUDART,
               TRAINPROF_NVML_LIB=NVML, TRAINPROF_PERFETTO_COMPRESS="0")
    env.update(env_extra or {})
    p = subprocess.run([TRAIN, tmp, str(STEPS), *keys], env=env, capture_output=True, text=True,
                       timeout=120)
    check(p.returncode == 0, f"gpu_train {keys} exit {p.returncode}: {p.stderr}")
    run_dir = p.stdout.strip().splitlines()[-1]
    traces = sorted(glob.glob(os.path.join(run_dir, "profiler_traces", "*.pt.trace.json")))
    check(len(traces) == 1, f"one trace file in {run_dir}: {traces}")
    with open(traces[0]) as f:
        trace = json.load(f)
    return run_dir, traces[0], trace, p.stderr


def by_cat(events, cat):
    return [e for e in events if e.get("cat") == cat and e.get("ph") == "X"]


def cli_json(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"trainprof {args}: exit {p.returncode} {p.stderr}")
    return json.loads(p.stdout)


def check_layout(trace, pid, main_tid):
    ev = trace["traceEvents"]
    steps = [e for e in ev if e.get("name", "").startswith("ProfilerStep#")]
    t0 = min(e["ts"] for e in steps)
    t1 = max(e["ts"] + e["dur"] for e in steps)
    kernels = by_cat(ev, "kernel")
    check(len(kernels) == ACTIVE * KERNELS_PER_STEP, f"{len(kernels)} kernels, {ACTIVE * KERNELS_PER_STEP} issued")
    names = {k["name"] for k in kernels}
    check(names == {"mlp_linear(float const*, float const*, float*, int, int, int)",
                    "mlp_linear_grad(float const*, float const*, float*, int, int, int)",
                    "sgd_update"}, f"kernel names demangled: {names}")
    for k in kernels:
        check(k["pid"] == 0 and k["tid"] == 7, f"kernel on GPU 0 stream 7: {k}")
        a = k["args"]
        check(a["grid"] == [128, 1, 1] and a["block"] == [256, 1, 1] and
              a["registers per thread"] == 32 and a["shared memory"] == 2048 and
              a["stream"] == 7 and a["device"] == 0, f"kernel args {a}")
        check(t0 <= k["ts"] and k["ts"] + k["dur"] <= t1 + 2000, f"kernel inside the window {k['ts']}")
    copies = by_cat(ev, "gpu_memcpy")
    check(len(copies) == ACTIVE - 1 or len(copies) == ACTIVE, f"{len(copies)} copies")
    check(all(c["name"] == "Memcpy HtoD (Pageable -> Device)" and c["args"]["bytes"] == 4 << 20
              for c in copies), "copy names and bytes")
    check(len(by_cat(ev, "gpu_memset")) == ACTIVE, "memsets")
    syncs = by_cat(ev, "cuda_sync")
    check(len(syncs) == ACTIVE and all(s["name"] == "Stream Sync" for s in syncs), "syncs")
    runtime = by_cat(ev, "cuda_runtime")
    launches = [r for r in runtime if r["name"] == "cudaLaunchKernel"]
    check(len(launches) == len(kernels), "one cudaLaunchKernel per kernel")
    check(all(r["pid"] == pid and r["tid"] == main_tid for r in runtime),
          "API calls on the calling thread's track")
    # ac2g flows: s at the call, f at the GPU activity, same id = correlation
    starts = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    ends = {e["id"]: e for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    check(len(ends) == len(kernels) + len(copies) + ACTIVE, f"{len(ends)} flow ends")
    by_corr = {r["args"]["correlation"]: r for r in runtime}
    for k in kernels:
        corr = k["args"]["correlation"]
        f, s, r = ends.get(corr), starts.get(corr), by_corr.get(corr)
        check(f and f["ts"] == k["ts"] and f["pid"] == 0 and f["tid"] == 7 and f.get("bp") == "e",
              f"flow end at kernel {corr}")
        check(s and r and s["ts"] == r["ts"] and s["tid"] == r["tid"], f"flow start at launch {corr}")
        if r:
            gap = k["ts"] - r["ts"]
            want = SGD_LAUNCH_TO_KERNEL_US if k["name"] == "sgd_update" else LAUNCH_TO_KERNEL_US
            check(abs(gap - want) < 1.0, f"launch->kernel {gap} us, {want} issued")
    meta = {(e["pid"], e["tid"], e["name"]): e["args"] for e in ev if e.get("ph") == "M"}
    check(meta.get((0, 0, "process_name"), {}).get("name") == "GPU 0", "GPU 0 process name")
    check(meta.get((0, 7, "thread_name"), {}).get("name") == "stream 7", "stream 7 track name")
    counters = {e["name"]: e["args"]["value"] for e in ev if e.get("ph") == "C"}
    check(counters.get("cuda:0 power_watts") == 250.5, f"NVML power counter: {counters}")
    check("cuda:0 utilization_percent" in counters, "NVML utilization counter")
    check(trace["trainprof"]["dropped_events"] == 0, "nothing dropped")
    return kernels


def check_analyzer(path, kernels):
    steps = cli_json("steps", "--json", path)
    check(steps["has_gpu"], "steps: has_gpu")
    for row in steps["steps"]:
        # 12 x 40 us layer kernels + 30 us sgd_update, never overlapping
        check(abs(row["kernel_us"] - 510.0) < 0.5, f"steps: kernel_us {row['kernel_us']}")
        check(row["memset_us"] > 0 and row["runtime_us"] > 0, f"steps: memset/runtime {row}")
    a = cli_json("analyze", "--json", path)
    check(a["kernel_calls"] == len(kernels), f"analyze: kernel_calls {a['kernel_calls']}")
    check(a["gpu_idle_pct"] > 50, f"analyze: GPU idle {a['gpu_idle_pct']}")
    ids = {f["id"] for f in a["findings"]}
    check({"launch_bound", "synchronization"} <= ids, f"analyze findings: {ids}")
    check(a["breakdown"]["kernel"]["pct"] > 0 and a["breakdown"]["memcpy"]["pct"] > 0,
          "analyze: kernel and memcpy shares")


def check_gpu_zones(run_dir):
    with open(os.path.join(run_dir, "operations.json")) as f:
        ops = {o["name"]: o for o in json.load(f)}
    for name in ("forward", "backward"):
        o = ops.get(name, {})
        # every step, windows or not; the fake CUDA events measure 2.5 ms
        check(o.get("gpu_count") == STEPS, f"{name} gpu_count {o.get('gpu_count')}")
        check(abs(o.get("gpu_total_time", 0) - STEPS * 0.0025) < 1e-6, f"{name} gpu_total_time")
        check(abs(o.get("gpu_avg_time", 0) - 0.0025) < 1e-6, f"{name} gpu_avg_time")
    check("gpu_count" not in ops.get("optimizer", {}), "CPU-only zone has no gpu columns")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # torch's spelling, CUPTI's clock set to CLOCK_MONOTONIC
        run_dir, path, trace, _ = run(tmp, "activities=cpu,cuda", "memory_every_n_steps=1")
        pid = trace["trainprof"]["pid"]
        threads = trace["trainprof"]["threads"]
        main_tid = next(int(k) for k, v in threads.items() if v == pid)
        kernels = check_layout(trace, pid, main_tid)
        check_analyzer(path, kernels)
        check_gpu_zones(run_dir)
        pf = glob.glob(os.path.join(run_dir, "profiler_traces", "*.perfetto-trace"))
        data = open(pf[0], "rb").read() if pf else b""
        check(b"GPU 0 stream 7" in data and b"mlp_linear_grad(float const*" in data,
              "Perfetto: GPU track and kernel names")

        # no timestamp callback: CUPTI's CLOCK_REALTIME timestamps are offset
        _, _, trace, _ = run(tmp, "cuda=true", env_extra={"FAKE_CUPTI_NO_CLOCK": "1"})
        ev = trace["traceEvents"]
        steps = [e for e in ev if e.get("name", "").startswith("ProfilerStep#")]
        t0 = min(e["ts"] for e in steps)
        t1 = max(e["ts"] + e["dur"] for e in steps)
        calls = by_cat(ev, "cuda_runtime")
        kernels = by_cat(ev, "kernel")
        # CUPTI's clock is CLOCK_REALTIME here: without the offset, events would
        # sit decades away from the steps they belong to
        check(len(kernels) == ACTIVE * KERNELS_PER_STEP, f"offset clock: {len(kernels)} kernels")
        check(calls and all(t0 - 100 <= r["ts"] <= t1 + 100 for r in calls),
              "offset clock: API calls inside the steps")
        check(all(t0 <= k["ts"] <= t1 + 2000 for k in kernels), "offset clock: kernels inside the steps")

        # the GPU runs 30 ms behind the CPU: at window end the last steps' kernels
        # are still queued; trainprof waits for them (never synchronizing)
        _, _, trace, _ = run(tmp, "cuda=true", env_extra={"FAKE_CUPTI_GPU_LAG_US": "30000"})
        n = len(by_cat(trace["traceEvents"], "kernel"))
        check(n == ACTIVE * KERNELS_PER_STEP, f"lagging GPU: {n} kernels of {ACTIVE * KERNELS_PER_STEP}")

        # CUPTI fails to initialize: an info line, CPU trace and GPU zones intact
        run_dir, _, trace, err = run(tmp, "cuda=true", env_extra={"FAKE_CUPTI_INIT_FAIL": "1"})
        check("profiling.cuda: no GPU activity in traces: CUPTI initialization failed" in err,
              f"init failure reported: {err}")
        check(not by_cat(trace["traceEvents"], "kernel"), "no kernels without CUPTI")
        check(any(e.get("name") == "forward" for e in trace["traceEvents"]), "CPU zones still traced")
        check_gpu_zones(run_dir)

        # profiling.cuda off (the default): no GPU records, no CUPTI message
        _, _, trace, err = run(tmp)
        check(not by_cat(trace["traceEvents"], "kernel") and "CUPTI" not in err, "cuda off")

        # bounded memory: 1 MiB of recorder memory, 40000 extra kernels a step
        run_dir, _, trace, _ = run(tmp, "cuda=true", "max_buffer_mb=1",
                                   env_extra={"GPU_TRAIN_BURST": "40000"})
        ev = trace["traceEvents"]
        dropped = trace["trainprof"]["dropped_events"]
        recorded = len(by_cat(ev, "kernel")) + len(by_cat(ev, "cuda_runtime"))
        check(dropped > 0, "GPU records dropped at the bound")
        check(recorded + dropped >= ACTIVE * 2 * 40000, f"recorded {recorded} + dropped {dropped}")
        with open(os.path.join(run_dir, "training_summary.json")) as f:
            check(json.load(f)["dropped_events"] >= dropped, "summary counts the GPU drops")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
