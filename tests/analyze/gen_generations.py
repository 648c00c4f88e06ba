"""Synthetic traces, one per generation of the trace formats trainprof reads.

Written from the published schemas (see docs/ANALYZE.md, "Trace
generations"), not copied from real files. Every trace holds the same
training loop: 4 steps of 10 ms, each with a 2 ms DataLoader wait (20 %), a
forward and a backward op, an optimizer step and, for device generations,
kernels and a host-to-device copy. `python gen_generations.py OUTDIR` writes
one file per generation; `generations()` returns {name: (document, expect)}.
"""
import gzip
import json
import os
import sys

STEP_US, STEPS, T0 = 10000.0, 4, 1000.0
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def loop(host, device=None, step_marker=None, wrap=None):
    """Events of the loop. host(name, ts, dur, role) and device(name, ts, dur,
    role) build one event each; step_marker(n, ts, dur) the step span (None:
    no step marker); wrap(n, ts, dur) an optional outer annotation."""
    out = []
    for n in range(STEPS):
        t = T0 + n * STEP_US
        if step_marker:
            out.append(step_marker(n + 1, t, STEP_US))
        if wrap:
            out.append(wrap(n, t + 1, STEP_US - 2))
        out.append(host(LOADER, t + 10, 2000, "loader"))
        out.append(host("aten::linear", t + 2100, 3000, "forward"))
        out.append(host("aten::mm", t + 5200, 3000, "backward"))
        out.append(host("Optimizer.step#SGD.step", t + 8300, 1000, "optimizer"))
        if device:
            out.append(device("void gemm_kernel<float>(float*)", t + 2200, 2800, "kernel"))
            out.append(device("Memcpy HtoD (Pageable -> Device)", t + 2050, 200, "memcpy"))
            out.append(device("void gemm_kernel<float>(float*)", t + 5300, 2800, "kernel"))
    return out


def kineto_1_8():
    """PyTorch 1.8-1.10: capitalised categories, string tids, Trace name."""
    def host(name, ts, dur, role):
        return {"ph": "X", "cat": "Operator", "name": name, "pid": 4242, "tid": "4242",
                "ts": ts, "dur": dur, "args": {"Input dims": [], "External id": 1}}

    def device(name, ts, dur, role):
        cat = "Memcpy" if role == "memcpy" else "Kernel"
        return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": "stream 7", "ts": ts,
                "dur": dur, "args": {"device": 0, "stream": 7, "correlation": 9, "external id": 1}}

    ev = loop(host, device, lambda n, t, d: host(f"ProfilerStep#{n}", t, d, "step"))
    ev += [{"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": "4242",
            "ts": T0 + 2150 + i * STEP_US, "dur": 30, "args": {"cbid": 211, "correlation": 9}}
           for i in range(STEPS)]
    ev.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Traces",
               "tid": "PyTorch Profiler", "ts": T0, "dur": STEPS * STEP_US,
               "args": {"Op count": 0, "Trace name": "PyTorch Profiler", "Trace iteration": 0}})
    return {"schemaVersion": 1, "traceEvents": ev}, {"steps": 4, "source": "ProfilerStep", "gpu": True}


def kineto_current(rocm=False):
    """PyTorch >= 1.11 (and ROCm builds: same categories, hip names)."""
    launch = "hipLaunchKernel" if rocm else "cudaLaunchKernel"
    kernel = "Cijk_Ailk_Bljk_SB_MT64x64x16" if rocm else "void gemm_kernel<float>(float*)"

    def host(name, ts, dur, role):
        cat = "user_annotation" if role in ("step", "loader") else "cpu_op"
        return {"ph": "X", "cat": cat, "name": name, "pid": 4242, "tid": 4242, "ts": ts, "dur": dur,
                "args": {"External id": 1, "Record function id": 0}}

    def device(name, ts, dur, role):
        cat = "gpu_memcpy" if role == "memcpy" else "kernel"
        name = kernel if role == "kernel" else name
        return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                "args": {"device": 0, "stream": 7, "correlation": 9, "External id": 1,
                         "blocks per SM": 0.5, "warps per SM": 2.0, "est. achieved occupancy %": 3}}

    ev = loop(host, device, lambda n, t, d: host(f"ProfilerStep#{n}", t, d, "step"))
    for i in range(STEPS):
        t = T0 + 2150 + i * STEP_US
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": launch, "pid": 4242, "tid": 4242,
                   "ts": t, "dur": 30, "args": {"cbid": 211, "correlation": 9}})
        ev.append({"ph": "s", "id": 9 + i, "pid": 4242, "tid": 4242, "ts": t, "cat": "ac2g", "name": "ac2g"})
        ev.append({"ph": "f", "id": 9 + i, "pid": 0, "tid": 7, "ts": t + 50, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        ev.append({"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 4242,
                   "tid": 4242, "ts": T0 + 5 + i * STEP_US, "dur": 9900, "args": {"Python id": 3}})
    ev.append({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}})
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": ev,
           "traceName": "rank0.pt.trace.json", "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000}
    return doc, {"steps": 4, "source": "ProfilerStep", "gpu": True}


def mtia():
    doc, exp = kineto_current()
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["cat"] = "mtia_ccp_events"
        elif e.get("cat") == "cuda_runtime":
            e["cat"], e["name"] = "mtia_runtime", "mtiaLaunchKernel"
    return doc, exp


def legacy_autograd():
    """torch.autograd.profiler export_chrome_trace: a bare array, no cat,
    pids "CPU functions" / "CUDA functions", cpu_to_cuda flows; no steps."""
    def host(name, ts, dur, role):
        return {"name": name, "ph": "X", "ts": ts, "dur": dur, "tid": 1, "pid": "CPU functions", "args": {}}

    def device(name, ts, dur, role):
        return {"name": name, "ph": "X", "ts": ts, "dur": dur, "tid": 0, "pid": "CUDA functions", "args": {}}

    ev = loop(host, device, wrap=lambda n, t, d: host("train_step", t, d, "wrap"))
    ev.append({"name": "gemm", "ph": "s", "ts": T0, "tid": 1, "pid": "CPU functions", "id": 1,
               "cat": "cpu_to_cuda", "args": {}})
    return ev, {"steps": 4, "source": "annotation", "name": "train_step", "gpu": True}


def lightning():
    """Lightning's PyTorchProfiler: record_function ranges, no ProfilerStep."""
    def host(name, ts, dur, role):
        cat = "user_annotation" if role in ("wrap", "loader") else "cpu_op"
        return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": 7, "ts": ts, "dur": dur}

    ev = loop(host, wrap=lambda n, t, d: host("[LightningModule]Net.training_step", t, d, "wrap"))
    ev += [host("## forward ##", T0 + 2050 + i * STEP_US, 3100, "wrap") for i in range(STEPS)]
    return {"traceEvents": ev}, {"steps": 4, "source": "annotation",
                                 "name": "[LightningModule]Net.training_step", "gpu": False}


def jax_perfetto():
    """jax.profiler.trace(create_perfetto_trace=True): ns display unit,
    process_name metadata, no categories, StepTraceAnnotation's step_num."""
    def host(name, ts, dur, role):
        return {"ph": "X", "pid": 1, "tid": 11, "ts": ts, "dur": dur, "name": name}

    def device(name, ts, dur, role):
        return {"ph": "X", "pid": 2, "tid": 21, "ts": ts, "dur": dur,
                "name": "MemcpyH2D" if role == "memcpy" else "fusion.3", "args": {"hlo_op": "fusion.3"}}

    def step(n, t, d):
        return {"ph": "X", "pid": 1, "tid": 11, "ts": t, "dur": d, "name": "train",
                "args": {"step_num": str(n)}}

    meta = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
            {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}}]
    return {"displayTimeUnit": "ns", "traceEvents": meta + loop(host, device, step)}, \
        {"steps": 4, "source": "step_num", "name": "train", "gpu": True}


def generations():
    return {
        "kineto_1_8.json": kineto_1_8(),
        "kineto_current.pt.trace.json": kineto_current(),
        "kineto_rocm.pt.trace.json": kineto_current(rocm=True),
        "kineto_mtia.pt.trace.json": mtia(),
        "legacy_autograd.json": legacy_autograd(),
        "lightning.pt.trace.json": lightning(),
        "jax_perfetto_trace.json.gz": jax_perfetto(),
    }


def write_all(outdir):
    os.makedirs(outdir, exist_ok=True)
    paths = {}
    for name, (doc, expect) in generations().items():
        path = os.path.join(outdir, name)
        data = json.dumps(doc).encode()
        with (gzip.open if name.endswith(".gz") else open)(path, "wb") as f:
            f.write(data)
        paths[path] = expect
    return paths


if __name__ == "__main__":
    for p in write_all(sys.argv[1]):
        print(p)
