"""The report page's Operators, Kernels and Modules data against other tools.

`trainprof report --html` is run on real traces and the page's data block
(D.operators, D.kernels, D.modules) is compared with:
1. torch's own key_averages() for the same run (tests/fixtures_gen/
   gen_torch_traces.py: by name, by input shapes, by stack; and
   ../shared/fixtures/torch_cpu): every row's calls, host self and total;
2. the nn.Module frames of the same trace, read here with Python's json;
3. HTA's kernel breakdown on Kineto GPU traces (HTA leaves out the kernels
   whose launch is not in a complete ProfilerStep, so the page is built from
   a copy of the trace without them), and `trainprof report --json`'s device
   tables on the whole trace.
"""
import collections
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ["TRAINPROF_BIN"]
SRC = os.environ["TP_SOURCE_DIR"]
FIX = os.environ.get("TP_FIXTURES", os.path.join(SRC, "..", "shared", "fixtures"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def page_data(trace, out):
    subprocess.run([BIN, "report", "--html", out, trace], check=True, capture_output=True)
    html = open(out, encoding="utf-8").read()
    m = re.search(r'<script id="trainprof-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def near_us(ns, us, calls):
    # the trace holds ns (3 decimals of us); torch sums floats of the same values
    return abs(ns / 1000.0 - us) <= 0.002 * max(1, calls) + 1e-6 * abs(us)


def compare_ops(rows, torch_rows, what, key=lambda r: r["key"], tkey=lambda r: r["name"]):
    mine = {tkey(r): r for r in rows}
    check(len(mine) == len(torch_rows), f"{what}: {len(mine)} rows, torch has {len(torch_rows)}")
    bad = 0
    for t in torch_rows:
        r = mine.get(key(t))
        if r is None:
            bad += 1
            check(False, f"{what}: {key(t)!r} missing")
            continue
        ok = r["calls"] == t["count"] and near_us(r["total"], t["cpu_total_us"], t["count"]) and \
            near_us(r["self"], t["self_cpu_us"], t["count"])
        if not ok:
            bad += 1
            check(False, f"{what}: {key(t)!r}: calls {r['calls']} self {r['self']} ns total {r['total']} ns; "
                  f"torch {t['count']} {t['self_cpu_us']} us {t['cpu_total_us']} us")
    print(f"{what}: {len(torch_rows)} rows compared, {bad} differ")


def shapes_key(s):
    return s.replace(" ", "")


def torch_generated(tmp):
    gen = os.path.join(SRC, "tests", "fixtures_gen", "gen_torch_traces.py")
    out = os.path.join(tmp, "torch")
    subprocess.run([sys.executable, gen, out], check=True)
    trace = os.path.join(out, "full.pt.trace.json")
    ka = json.load(open(os.path.join(out, "full.key_averages.json")))
    D = page_data(trace, os.path.join(tmp, "torch.html"))
    ops = D["operators"]
    check(ops["has_shapes"] and ops["has_stacks"], "torch trace: shapes and stacks not seen")
    check(ops["by_name"]["left_out"] == 0, "torch trace: rows left out")
    compare_ops(ops["by_name"]["rows"], ka["by_name"], "by name")
    # group_by_stack_n=5: torch 2.13 gives kineto events no stack, so the
    # table groups like by_name; the page's stacks come from python frames
    compare_ops(ops["by_name"]["rows"], ka["by_stack"], "by stack (names)")
    compare_ops(ops["by_shape"]["rows"], ka["by_shape"], "by shape",
                key=lambda r: (r["key"], shapes_key(r["input_shapes"])),
                tkey=lambda r: (r["name"], shapes_key(r["shapes"])))
    conv = [r for r in ops["by_name"]["rows"] if r["name"] == "aten::conv2d"][0]
    check(conv.get("stacks") and any("forward" in f for s in conv["stacks"] for f in s["frames"]),
          f"aten::conv2d: no python stack with its forward frame: {conv.get('stacks')}")
    # modules: every nn.Module frame of the trace, read here
    ev = json.load(open(trace))["traceEvents"]
    mods = collections.defaultdict(lambda: [0, 0])
    for e in ev:
        if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: "):
            m = mods[e["name"][11:]]
            m[0] += 1
            m[1] += round(e["dur"] * 1000)
    page_mods = {m["name"]: m for m in D["modules"]["modules"]}
    check(set(page_mods) == set(mods), f"modules: {sorted(page_mods)} vs {sorted(mods)}")
    for name, (calls, total) in mods.items():
        m = page_mods.get(name, {})
        check(m.get("calls") == calls and abs(m.get("total", 0) - total) <= calls,
              f"module {name}: {m} vs calls {calls} total {total}")
    by_id = {m["id"]: m for m in D["modules"]["modules"]}
    check(by_id[page_mods["Conv2d_0"]["parent"]]["name"] == "Block_0", "Conv2d_0's parent is not Block_0")
    check(D["kernels"] is None, "a CPU trace has kernels")


# A torch 2.13 CPU run whose operators take tensor lists (aten::cat,
# aten::stack, Adam(foreach=True)'s aten::_foreach_*: "Input Dims" of nested
# lists, [[[2, 4], [2, 4]], []], and lists of 0-dim tensors, [[[], []], []]),
# profiled with modules and stacks: the trace, key_averages by input shape,
# and torch's own module call tree of the same window (its python frames).
TENSOR_LIST_RUN = r"""
import json, sys, torch, torch.nn as nn
from torch.profiler import ProfilerActivity, profile
out = sys.argv[1]
torch.manual_seed(0)
class Branches(nn.Module):
    def __init__(s):
        super().__init__(); s.a = nn.Linear(6, 4); s.b = nn.Linear(6, 4)
    def forward(s, x):
        return torch.cat([s.a(x), s.b(x)], 1)
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.br = Branches(); s.head = nn.Linear(8, 3)
    def forward(s, x):
        h = s.br(x)
        z = torch.stack([h, h * 2]).sum(0)
        e = torch.cat([x[:0], x])          # an empty tensor in the list
        return s.head(z).sum() + e.sum()
m = Net()
opt = torch.optim.Adam(m.parameters(), lr=1e-3, foreach=True)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_modules=True, with_stack=True) as p:
    for i in range(3):
        x = torch.randn(2 + i % 2, 6)      # two batch sizes: cat's shapes differ, torch's key does not
        loss = m(x); opt.zero_grad(); loss.backward(); opt.step()
p.export_chrome_trace(out + "/lists.pt.trace.json")
rows = [{"key": e.key, "input_shapes": str(e.input_shapes) if e.input_shapes else "", "count": e.count,
         "self_cpu_us": e.self_cpu_time_total, "cpu_total_us": e.cpu_time_total}
        for e in p.key_averages(group_by_input_shape=True)]
json.dump(rows, open(out + "/lists.key_averages.json", "w"))
"""


def run_tensor_list_run(out):
    """TENSOR_LIST_RUN into out. Tried up to three times: torch 2.13's
    key_averages() now and then fails on an event name that is not UTF-8
    (UnicodeDecodeError in _parse_kineto_results), a torch fault unrelated
    to the trace the page reads."""
    for attempt in range(3):
        r = subprocess.run([sys.executable, "-c", TENSOR_LIST_RUN, out], capture_output=True, text=True)
        if r.returncode == 0:
            return
        print(f"torch run {attempt + 1} failed: {r.stderr.strip().splitlines()[-1:]}")
    raise RuntimeError("the torch run failed three times:\n" + r.stderr[-2000:])


def tensor_lists(tmp):
    """Item 6: the page's shape mode groups as key_averages(group_by_input_shape=True)."""
    run_tensor_list_run(tmp)
    trace = os.path.join(tmp, "lists.pt.trace.json")
    ka = json.load(open(os.path.join(tmp, "lists.key_averages.json")))
    D = page_data(trace, os.path.join(tmp, "lists.html"))
    ops = D["operators"]
    rows = ops["by_shape"]["rows"]
    ev = json.load(open(trace))["traceEvents"]
    # torch 2.13 now and then names a python frame with bytes that are not
    # its function's ("_cupti_monitor.py(0): " in its table, something else
    # in its trace): a torch fault, not the page's. Such a frame is left out
    # of both sides, by name, and said; every other row must still match.
    written = {e.get("name") for e in ev}
    garbled = {t["key"] for t in ka if t["key"] not in written}
    if garbled:
        print(f"note: torch's table names {sorted(garbled)} that its trace does not: left out")
        ka = [t for t in ka if t["key"] not in garbled]
        keys = {t["key"] for t in ka}
        odd = [r for r in rows if r["name"] not in keys]
        print(f"note: the page's rows of names torch's table does not have: {[r['name'] for r in odd]!r}")
        check(len(odd) <= len(garbled) and all(r["kind"] == "python" for r in odd),
              f"tensor lists: page rows torch does not have: {[(r['name'], r['kind']) for r in odd]!r}")
        rows = [r for r in rows if r not in odd]
    compare_ops(rows, ka, "tensor lists by shape", key=lambda r: (r["key"], shapes_key(r["input_shapes"])),
                tkey=lambda r: (r["name"], shapes_key(r["shapes"])))
    # the run has what the comparison is about: cat with two different
    # structured shapes, one torch row; foreach ops with lists of 0-dim tensors
    cat_dims = {json.dumps(e["args"]["Input Dims"]) for e in ev if e.get("name") == "aten::cat" and e.get("cat") == "cpu_op"}
    check(len(cat_dims) >= 3, f"tensor lists: aten::cat's Input Dims {cat_dims}")
    check(any(r["key"] == "aten::cat" and shapes_key(r["input_shapes"]) == "[[],[]]" for r in ka),
          "tensor lists: torch has no aten::cat [[], []] row")
    check(any(r["key"].startswith("aten::_foreach_") for r in ka), "tensor lists: no _foreach_ op in the run")
    return trace, D


# The TensorBoard plugin's tensor-core facts (tb_plugin/torch_tb_profiler/
# profiler/tensor_core.py before kineto 94979607), written out here apart
# from the C: kernel-name substrings (and the newer kernels' the page adds)
# and the eligible operators.
TC_KERNEL = ["h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
             "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
             "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm",
             "c1688", "xmma", "gmma", "wmma", "imma", "tensorop", "_mma_"]
TC_OPS = set("""aten::_convolution aten::conv1d aten::conv2d aten::conv3d aten::conv_tbc aten::conv_transpose1d
aten::conv_transpose2d aten::conv_transpose3d aten::convolution aten::cudnn_convolution
aten::cudnn_convolution_transpose aten::prelu aten::addmm aten::addmv aten::addr aten::matmul aten::mm aten::mv
aten::linear aten::addbmm aten::baddbmm aten::bmm aten::chain_matmul aten::linalg_multi_dot
aten::_thnn_fused_lstm_cell aten::_thnn_fused_gru_cell aten::lstm_cell aten::gru_cell aten::rnn_tanh_cell
aten::rnn_relu_cell CudnnConvolutionBackward BmmBackward0 aten::cudnn_convolution_transpose_backward
CudnnConvolutionTransposeBackward MmBackward aten::cudnn_convolution_backward_weight aten::addmm_ AddmvBackward
MvBackward aten::cudnn_convolution_transpose_backward_weight aten::cudnn_convolution_transpose_backward_input
AddmmBackward aten::cudnn_convolution_backward_input AddbmmBackward aten::cudnn_convolution_backward""".split())
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "Memcpy", "Memset", "Kernel"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}


def uses_tc(name):
    low = name.lower()
    return any(p in low for p in TC_KERNEL)


def host_tree(ev):
    """Host spans nested per thread (start, longer first), torch's folding of
    an only child of the same name, kernels given to the innermost operator
    around their runtime call: a list of (name, kind, node) roots."""
    def ns(x):
        return round(x * 1000)
    kern = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS and e.get("cat") != "gpu_user_annotation" \
                and "correlation" in e.get("args", {}):
            kern[e["args"]["correlation"]].append(e)
    threads = collections.defaultdict(list)
    for i, e in enumerate(ev):
        if e.get("ph") != "X" or e.get("cat") in GPU_CATS or e.get("cat") == "Trace" or "ts" not in e:
            continue
        threads[(e.get("pid"), e.get("tid"))].append((ns(e["ts"]), ns(e["ts"]) + ns(e.get("dur", 0)), i, e))
    roots = []
    for spans in threads.values():
        spans.sort(key=lambda x: (x[0], -x[1], x[2]))
        stack = []
        for start, end, _, e in spans:
            while stack and (start >= stack[-1]["end"] or end > stack[-1]["end"]):
                stack.pop()
            name = e["name"]
            if name.startswith("ProfilerStep#"):
                name = "ProfilerStep*"
            cat = e.get("cat")
            kind = "runtime" if cat in RUNTIME_CATS else "python" if cat == "python_function" else \
                "annotation" if cat in ("user_annotation", "gpu_user_annotation") else "op"
            node = {"name": name, "kind": kind, "end": end, "children": [], "dself": 0, "tcself": 0}
            (stack[-1]["children"] if stack else roots).append(node)
            if kind == "runtime":
                owner = next((f for f in reversed(stack) if f["kind"] in ("op", "annotation")), None)
                for k in kern.get(e.get("args", {}).get("correlation"), []):
                    if owner is not None:
                        owner["dself"] += ns(k["dur"])
                        if k.get("cat") == "kernel" and uses_tc(k["name"]):
                            owner["tcself"] += ns(k["dur"])
            stack.append(node)
    return roots


def tc_rows(roots):
    """Per name: tensor-core self/total time, device self/total, eligible."""
    rows = collections.defaultdict(lambda: {"tc_self": 0, "tc_total": 0, "dself": 0, "dtotal": 0, "elig": False})

    def walk(n):
        while len(n["children"]) == 1 and n["children"][0]["name"] == n["name"]:
            c = n["children"][0]  # torch's _remove_dup_nodes
            n["children"], n["dself"], n["tcself"] = c["children"], n["dself"] + c["dself"], n["tcself"] + c["tcself"]
        tc, dev = n["tcself"], n["dself"]
        elig = n["name"] in TC_OPS or (n["kind"] == "op" and n["tcself"] > 0)
        for c in n["children"]:
            ct, cd, ce = walk(c)
            tc, dev = tc + ct, dev + cd
            elig = elig or (n["kind"] == "op" and ce)
        if n["kind"] != "runtime":
            r = rows[n["name"]]
            r["tc_self"] += n["tcself"]
            r["tc_total"] += tc
            r["dself"] += n["dself"]
            r["dtotal"] += dev
            r["elig"] = r["elig"] or elig
        return tc, dev, elig
    for r in roots:
        walk(r)
    return rows


def tensor_cores(tmp, name):
    """Item 8: the Operators view's tensor-core columns and the Kernels
    view's flag against the plugin's rules, computed here from the trace."""
    src = os.path.join(SRC, "tests", "fixtures", name)
    D = page_data(src, os.path.join(tmp, "tc.html"))
    ev = json.load(gzip.open(src))["traceEvents"]
    want = tc_rows(host_tree(ev))
    ops = D["operators"]
    check(ops["by_name"]["left_out"] == 0, f"{name}: operators left out")
    n = tc = 0
    for r in ops["by_name"]["rows"]:
        if r["kind"] in ("runtime", "python"):
            continue
        w = want.get(r["name"])
        if w is None or not w["dtotal"]:
            check(w is None or "tc_self" not in r, f"{name}: {r['name']}: tensor-core fields without device time")
            continue
        n += 1
        tc += w["tc_self"] > 0
        got = (r.get("tc_self"), r.get("tc_total"), r.get("tc_eligible"), r["dself"], r["dtotal"])
        check(got == (w["tc_self"], w["tc_total"], w["elig"], w["dself"], w["dtotal"]),
              f"{name}: {r['name']}: page tc_self, tc_total, eligible, dself, dtotal {got}, computed {w}")
    check(tc > 0, f"{name}: no operator launched tensor-core kernels")
    kern = D["kernels"]
    tc_ns = 0
    for r in kern["by_name"]["rows"]:
        check(r["tensor_cores"] == uses_tc(r["name"]), f"{name}: kernel {r['name'][:80]}: tensor_cores {r['tensor_cores']}")
        tc_ns += r["total"] if uses_tc(r["name"]) else 0
    check(kern["tensor_core_total"] == tc_ns, f"{name}: tensor-core kernel time {kern['tensor_core_total']} vs {tc_ns}")
    # by launch configuration, the plugin's two columns: the kernel's flag and
    # "Op is Tensor Cores eligible", its launching operator's by name
    elig = 0
    for r in kern["by_config"]["rows"]:
        check((r["tensor_cores"], r["op_tc_eligible"]) == (uses_tc(r["name"]), r["op"] in TC_OPS),
              f"{name}: kernel {r['name'][:60]} under {r['op']}: tc {r['tensor_cores']}, op eligible {r['op_tc_eligible']}")
        elig += r["op_tc_eligible"]
    check(elig > 0, f"{name}: no kernel launched by an eligible operator")
    print(f"tensor cores {name}: {n} operators with device time compared, {tc} on tensor cores")


def module_frames(ev):
    """The nn.Module frames of a trace nested per thread: [(pid, tid, start ns,
    dur ns, path of module names from the outermost)]."""
    threads = collections.defaultdict(list)
    for i, e in enumerate(ev):
        if e.get("ph") == "X" and e.get("cat") == "python_function" and e["name"].startswith("nn.Module: "):
            threads[(e["pid"], e["tid"])].append((round(e["ts"] * 1000), round(e["dur"] * 1000), i, e["name"][11:]))
    out = []
    for (pid, tid), fr in threads.items():
        fr.sort(key=lambda x: (x[0], -x[1], x[2]))
        stack = []
        for start, dur, _, name in fr:
            while stack and (start >= stack[-1][1] or start + dur > stack[-1][1]):
                stack.pop()
            path = (stack[-1][2] if stack else ()) + (name,)
            stack.append((start, start + dur, path))
            out.append((pid, tid, start, dur, path))
    return out


def with_kernels(ev):
    """The torch CPU trace with a kernel for every aten::addmm, aten::mm and
    aten::cat call: a cudaLaunchKernel span in the middle of the call (so on
    its innermost operator there) and a kernel of its correlation id, of a
    duration of its own (made up: no GPU fixture has nn.Module frames)."""
    out = list(ev)
    corr = 1
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["name"] in ("aten::addmm", "aten::mm", "aten::cat"):
            mid = e["ts"] + e["dur"] / 2
            out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": e["pid"], "tid": e["tid"],
                        "ts": mid, "dur": 0.001, "args": {"correlation": corr}})
            out.append({"ph": "X", "cat": "kernel", "name": "void fake_kernel<%d>()" % (corr % 3), "pid": 0, "tid": 7,
                        "ts": mid + 5, "dur": 1 + corr % 7, "args": {"correlation": corr, "device": 0, "stream": 7}})
            corr += 1
    return out, corr - 1


def modules(tmp, trace):
    """Item 8: the module timeline (every call, on its thread, nested) and
    each module's device self time, against the trace's own frames."""
    ev = json.load(open(trace))["traceEvents"]
    frames = module_frames(ev)
    D = page_data(trace, os.path.join(tmp, "mods.html"))
    t = D["modules"].get("timeline")
    check(t is not None, "modules: no timeline")
    if t is None:
        return
    mods = {m[0]: (m[1], m[2]) for m in t["modules"]}

    def path(mid):
        p = []
        while mid:
            p.append(mods[mid][1])
            mid = mods[mid][0]
        return tuple(reversed(p))
    t0 = min(f[2] for f in frames)
    want = sorted((f[0], f[1], f[2] - t0, f[3], f[4]) for f in frames)
    got = sorted((t["lanes"][c[0]][0], t["lanes"][c[0]][1], c[1], c[2], path(c[3])) for c in t["calls"])
    check(t["all_calls"] == len(frames) and got == want,
          f"modules timeline: {len(got)} calls of {t['all_calls']}, trace {len(want)}; first differences "
          f"{[(g, w) for g, w in zip(got, want) if g != w][:3]}")
    check(len(t["lanes"]) >= 1 and max(len(p) for *_, p in want) >= 3, "modules timeline: no nesting in the run")
    print(f"module timeline: {len(got)} calls compared")
    # device self per module, on the same trace with a kernel per matmul and cat
    doc = json.load(open(trace))
    doc["traceEvents"], nk = with_kernels(doc["traceEvents"])
    gpu_trace = os.path.join(tmp, "mods_gpu.json")
    json.dump(doc, open(gpu_trace, "w"))
    D = page_data(gpu_trace, os.path.join(tmp, "mods_gpu.html"))
    roots = host_tree(doc["traceEvents"])
    dself = collections.Counter()

    def walk(n, mod):
        if n["kind"] == "python" and n["name"].startswith("nn.Module: "):
            mod = mod + (n["name"][11:],)
        if mod and n["dself"]:
            dself[mod] += n["dself"]
        for c in n["children"]:
            walk(c, mod)
    for r in roots:
        walk(r, ())
    rows = D["modules"]["modules"]
    by_id = {m["id"]: m for m in rows}

    def row_path(m):
        p = []
        while m:
            p.append(m["name"])
            m = by_id.get(m["parent"])
        return tuple(reversed(p))
    page = {row_path(m): m.get("dself") for m in rows if m.get("dself")}
    check(nk > 10 and page == dict(dself), f"modules device self: page {page} vs computed {dict(dself)}")
    # device self sums to the kernels launched inside modules, below each module's device total
    check(all(m.get("dself", 0) <= m["dtotal"] for m in rows), "modules: a device self above its device total")
    print(f"modules device self: {len(page)} modules compared, {nk} kernels")


def torch_fixture(tmp):
    d = os.path.join(FIX, "torch_cpu")
    if not os.path.isdir(d):
        print("SKIP part: no", d)
        return
    D = page_data(os.path.join(d, "mlp_adam.pt.trace.json"), os.path.join(tmp, "mlp.html"))
    rows = {r["name"]: r for r in D["operators"]["by_name"]["rows"]}
    ka = json.load(open(os.path.join(d, "mlp_adam.key_averages.json")))
    for t in ka:  # this fixture's tables are in whole microseconds
        r = rows.get(t["name"])
        ok = r and r["calls"] == t["count"] and abs(r["total"] / 1000 - t["cpu_time_total_us"]) <= 1 + t["count"] and \
            abs(r["self"] / 1000 - t["self_cpu_time_total_us"]) <= 1 + t["count"]
        check(ok, f"mlp_adam {t['name']}: {r} vs {t}")
    print(f"mlp_adam: {len(ka)} rows compared")


def hta_kernels(tmp, name, ns_trace=False):
    src = os.path.join(FIX, "kineto", name)
    if not os.path.exists(src):
        print("SKIP part: no", src)
        return
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        print("SKIP part: HTA is not installed")
        return
    hdir = os.path.join(tmp, "hta_" + name[:12])
    os.makedirs(hdir)
    shutil.copy(src, os.path.join(hdir, "rank-0.json.gz"))
    _, km = TraceAnalysis(trace_dir=hdir).get_gpu_kernel_breakdown(visualize=False, num_kernels=10 ** 6)
    # HTA keeps the kernels launched (by correlation) from host events that
    # start before the last ProfilerStep#: the same cut, made here
    doc = json.load(gzip.open(src))
    ev = doc["traceEvents"]
    last = max(e["ts"] for e in ev if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    host_corr = {e["args"]["correlation"] for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
                 and "correlation" in e.get("args", {}) and e["ts"] < last}
    keep = [e for e in ev if e.get("cat") not in ("kernel",) or e.get("args", {}).get("correlation") in host_corr]
    doc["traceEvents"] = keep
    cut = os.path.join(tmp, "cut_" + name.replace(".gz", ""))
    json.dump(doc, open(cut, "w"))
    D = page_data(cut, os.path.join(tmp, "cut.html"))
    mine = {r["name"]: r for r in D["kernels"]["by_name"]["rows"]}
    n = 0
    for _, r in km.iterrows():
        if r["kernel_type"] == "MEMORY":
            continue
        n += 1
        k = mine.get(r["name"])
        calls = round(r["sum (us)"] / r["mean (us)"])
        # a trace in ns: HTA rounds the times down to whole us (its warning
        # cites pytorch#122425), so each kernel may lose up to 2 us there
        tol, tol1 = (2 * calls + 0.01, 2.01) if ns_trace else (0.01, 0.01)
        ok = k is not None and k["calls"] == calls and abs(k["total"] / 1000 - r["sum (us)"]) < tol and \
            abs(k["max"] / 1000 - r["max (us)"]) < tol1 and abs(k["min"] / 1000 - r["min (us)"]) < tol1
        check(ok, f"HTA {name}: {r['name'][:80]}: page {k and (k['calls'], k['total'], k['min'], k['max'])} "
              f"HTA {calls} {r['sum (us)']} {r['min (us)']} {r['max (us)']}")
    check(n == len(mine), f"HTA {name}: {n} kernels, page {len(mine)}")
    print(f"HTA {name}: {n} kernels compared")


def report_json_kernels(tmp, name):
    src = os.path.join(FIX, "kineto", name)
    if not os.path.exists(src):
        return
    D = page_data(src, os.path.join(tmp, "k.html"))
    rep = json.loads(subprocess.run([BIN, "report", "--json", src], check=True, capture_output=True, text=True).stdout)
    dev = collections.defaultdict(lambda: [0, 0])
    for t in rep["tables"]:
        if t["table"] == "gpu":
            for o in t["ops"]:
                dev[o["name"]][0] += o["calls"]
                dev[o["name"]][1] += o["total_us"]
    k = D["kernels"]
    for r in k["by_name"]["rows"]:
        d = dev.get(r["name"])
        check(d is not None and d[0] == r["calls"] and abs(d[1] - r["total"] / 1000) <= 0.001 * r["calls"] + 0.01,
              f"report --json {name}: {r['name'][:60]}: page {r['calls']} {r['total']} vs {d}")
    # every kernel of the config table has a launching operator (all are launched by runtime calls here)
    check(all(r["op"] for r in k["by_config"]["rows"]), f"{name}: a kernel without its operator")
    cfg_calls = sum(r["calls"] for r in k["by_config"]["rows"])
    check(cfg_calls == sum(r["calls"] for r in k["by_name"]["rows"]), f"{name}: config rows do not add up")
    ops = D["operators"]
    check(ops["device_unattributed"] == 0 and ops["device_by_correlation"] == ops["device_events"],
          f"{name}: attribution {ops['device_by_correlation']}/{ops['device_events']}")
    # device time of the operators adds up to every device event
    dself = sum(r["dself"] for r in ops["by_name"]["rows"])
    allgpu = sum(o["total_us"] for t in rep["tables"] if t["table"] == "gpu" for o in t["ops"])
    check(abs(dself / 1000 - allgpu) <= 0.01 * len(ops["by_name"]["rows"]) + 1,
          f"{name}: operators' device self {dself / 1000} us vs device total {allgpu} us")
    print(f"report --json {name}: {len(k['by_name']['rows'])} kernels compared")


def main():
    tmp = tempfile.mkdtemp(prefix="tp_views_ops_")
    try:
        torch_generated(tmp)
        lists_trace, _ = tensor_lists(tmp)
        modules(tmp, lists_trace)
        tensor_cores(tmp, "trace_filter__sampled_rank-0.json.gz")
        tensor_cores(tmp, "trace_diff__control__control.json.gz")
        torch_fixture(tmp)
        hta_kernels(tmp, "trace_filter__sampled_rank-0.json.gz")
        hta_kernels(tmp, "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", ns_trace=True)
        report_json_kernels(tmp, "trace_filter__sampled_rank-0.json.gz")
        report_json_kernels(tmp, "nccl_parser_config__nccl_data.json.gz")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
