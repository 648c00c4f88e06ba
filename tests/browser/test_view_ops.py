"""The Operators, Kernels and Modules views in a real browser (headless
Debian chromium via playwright), with no console error:

1. a torch 2.13 CPU trace (record_shapes, with_stack, with_modules; written
   by tests/fixtures_gen/gen_torch_traces.py): every row the Operators table
   shows has torch key_averages()' calls, host self and host total (as the
   page's own TP.fmtDur writes them), by operator and by operator + input
   shapes; search and stacks work; the Modules tree has torch's modules;
2. a Kineto GPU trace: the Kernels table's calls and totals are
   `trainprof report --json`'s device table; operators show device time;
3. a run of examples/python/train_cnn.py with torch_ops: the run's own
   report.html lists the torch operators;
4. a Lightning run profiled by its PyTorchProfiler: the hook table and the
   module tree ([pl][module] ranges);
5. names that are markup (<!--<script>, </script>, quotes, backslashes,
   U+2028) show as text.
Also (issue 31): the tensor-core columns of Operators and Kernels on a GPU
trace, hidden on a CPU one; the Modules view's device self column and its
module timeline (one bar per module call, nested; its lanes named by the
threads' names, as on the Timeline).
Screenshots go to <build>/browser-artifacts/; with TP_UPDATE_IMAGES=1 the
ones docs/REPORT.md shows are copied to docs/images/report_*.png.
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import artifacts_dir, browser_or_skip, launch, watch_errors  # noqa: E402

sync_playwright = browser_or_skip()

BIN = os.environ["TRAINPROF_BIN"]
SRC = os.environ["TP_SOURCE_DIR"]
BUILD = os.environ["TP_BUILD_DIR"]
FIX = os.path.normpath(os.environ.get("TP_FIXTURES", os.path.join(SRC, "..", "shared", "fixtures")))  # a path as a user writes it (pages show it)
ART = artifacts_dir()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# artifacts -> the docs/images/ names docs/REPORT.md shows
DOC_IMAGES = {"view_ops_operators.png": "report_operators.png", "view_ops_by_shape.png": "report_operators_shapes.png",
              "view_ops_stacks.png": "report_operators_stacks.png", "view_ops_kernels.png": "report_kernels.png",
              "view_ops_kernels_config.png": "report_kernels_config.png",
              "view_ops_operators_gpu.png": "report_operators_gpu.png", "view_ops_modules.png": "report_modules.png",
              "view_ops_modules_timeline.png": "report_modules_timeline.png",
              "view_ops_tensor_lists.png": "report_operators_lists.png",
              "view_ops_lightning.png": "report_lightning.png"}


def shoot(page, name, **kw):
    path = os.path.join(ART, name)
    page.screenshot(path=path, **kw)
    if os.environ.get("TP_UPDATE_IMAGES") and name in DOC_IMAGES:
        shutil.copy(path, os.path.join(SRC, "docs", "images", DOC_IMAGES[name]))


def html_of(trace, out):
    subprocess.run([BIN, "report", "--html", out, trace], check=True, capture_output=True)
    return out


def open_view(browser, path, key, width=1200):
    page = browser.new_page(viewport={"width": width, "height": 1000})
    errors = watch_errors(page)
    page.goto("file://" + os.path.abspath(path), wait_until="load")
    page.click(f'#tabs button[data-view="{key}"]')
    return page, errors


def table_cells(page, table_id):
    return page.evaluate("""id => Array.from(document.querySelectorAll('#' + id + ' tbody tr'))
        .filter(tr => !tr.hidden).map(tr => Array.from(tr.cells).map(td => td.textContent))""", table_id)


def header(page, table_id):
    return page.evaluate("id => Array.from(document.querySelectorAll('#' + id + ' thead th')).map(th => th.textContent)",
                         table_id)


def fmt_durs(page, values_ns):
    return page.evaluate("v => v.map(x => TP.fmtDur(x))", values_ns)


LAYOUT_JS = """() => {
  const out = [], sec = document.querySelector('main>section.view:not([hidden])');
  for (const td of sec.querySelectorAll('td.r'))
    if (td.offsetParent && getComputedStyle(td).whiteSpace !== 'nowrap') { out.push('numeric cell may wrap: ' + td.textContent); break; }
  for (const td of sec.querySelectorAll('td.l'))
    if (td.offsetParent && td.scrollWidth > td.clientWidth + 1 && (!td.title || td.title.length < td.textContent.length)) { out.push('cut name without its full text as title: ' + td.textContent.slice(0, 60)); break; }
  for (const w of sec.querySelectorAll('.tp-table-wrap')) {
    const wide = [...w.querySelectorAll('tbody tr:first-child td.l')].filter(td => td.getBoundingClientRect().width > 340);
    if (w.offsetParent && w.scrollWidth > w.clientWidth + 1 && wide.length)
      out.push('a name column pushes the table past its card (' + w.scrollWidth + ' > ' + w.clientWidth + ' px): ' + (w.querySelector('table').id || ''));
  }
  for (const t of sec.querySelectorAll('svg.chart text.lbl')) {
    if (!t.getClientRects().length) continue;
    const s = t.ownerSVGElement.getBoundingClientRect(), b = t.getBoundingClientRect();
    if (b.left < s.left - 0.5) out.push('bar label clipped on the left: ' + t.textContent);
  }
  return out;
}"""


def check_layout(page, what):
    """Framework layout (common.js, style.css): numeric cells on one line, a cut
    name shows in full on hover, no name column pushing a table past its card, no bar label
    cut off on the left."""
    for problem in page.evaluate(LAYOUT_JS):
        check(False, f"{what}: {problem}")


def check_rows_against_torch(page, torch_rows, key, what, shapes=False):
    """Each row shown: its cells are the page data as TP.fmtDur writes it,
    and that data is torch's (calls exact, times within 2 ns a call: torch
    sums float microseconds of the same ns values)."""
    cells = table_cells(page, "operators-table")
    head = header(page, "operators-table")
    i_calls, i_self, i_total = head.index("Calls"), head.index("Host self"), head.index("Host total")
    i_shape = head.index("Input shapes") if shapes else None
    check(len(cells) > 0, f"{what}: empty table")
    D = page.evaluate("JSON.parse(document.getElementById('trainprof-data').textContent).operators")
    rows = D["by_shape" if shapes else "by_name"]["rows"]
    data = {((r["name"], r["shapes"].replace(" ", "")) if shapes else r["name"]): r for r in rows}
    want = {key(t): t for t in torch_rows}
    bad = 0
    for c in cells:
        k = (c[0], c[i_shape].replace(" ", "")) if shapes else c[0]
        t, r = want.get(k), data.get(k)
        if t is None or r is None:
            bad += 1
            check(False, f"{what}: row {k!r}: torch {t}, page data {r}")
            continue
        shown = fmt_durs(page, [r["self"], r["total"]])
        ok = c[i_calls] == f"{t['count']:,}" and r["calls"] == t["count"] and [c[i_self], c[i_total]] == shown and \
            abs(r["self"] - t["self_cpu_us"] * 1000) <= 2 * t["count"] and \
            abs(r["total"] - t["cpu_total_us"] * 1000) <= 2 * t["count"]
        if not ok:
            bad += 1
            check(False, f"{what}: {k!r}: page {c[i_calls]} {c[i_self]} {c[i_total]} (data {r['self']} {r['total']} ns), "
                  f"torch {t['count']} {t['self_cpu_us']} {t['cpu_total_us']} us")
    # Self %: of all self time, as torch's table divides it (issue 31: never above 100 %)
    i_pct = head.index("Self %")
    total = sum(t["self_cpu_us"] for t in torch_rows)
    for c in cells:
        k = (c[0], c[i_shape].replace(" ", "")) if shapes else c[0]
        t = want.get(k)
        pct = float(c[i_pct].rstrip("%"))
        check(pct <= 100, f"{what}: {k!r}: Self % {c[i_pct]} above 100 %")
        if t is None or max(x["self_cpu_us"] for x in torch_rows) > total:
            continue
        ok = c[i_pct] in page.evaluate("vs => vs.map(v => TP.fmtPct(v))", [100 * t["self_cpu_us"] / total + e for e in (-0.005, 0, 0.005)])
        if not ok:
            bad += 1
            check(False, f"{what}: {k!r}: Self % {c[i_pct]}, torch {100 * t['self_cpu_us'] / total:.3f}%")
    print(f"{what}: {len(cells)} rows on the page compared with torch, {bad} differ")


def torch_page(browser, tmp):
    gen = os.path.join(SRC, "tests", "fixtures_gen", "gen_torch_traces.py")
    out = os.path.join(tmp, "torch")
    subprocess.run([sys.executable, gen, out], check=True, capture_output=True)
    ka = json.load(open(os.path.join(out, "full.key_averages.json")))
    path = html_of(os.path.join(out, "full.pt.trace.json"), os.path.join(tmp, "torch.html"))
    page, errors = open_view(browser, path, "operators")
    shoot(page, "view_ops_operators.png")
    # python frames are off by default: the table shows the other kinds
    check_rows_against_torch(page, ka["by_name"], lambda t: t["key"], "by operator")
    n_default = len(table_cells(page, "operators-table"))
    page.check('input[data-kind="python"]')
    check(len(table_cells(page, "operators-table")) == min(200, len(ka["by_name"])),
          "with python frames the table does not list every torch row (up to its 200-row limit)")
    check_rows_against_torch(page, ka["by_name"], lambda t: t["key"], "by operator, python frames included")
    page.uncheck('input[data-kind="python"]')
    check(len(table_cells(page, "operators-table")) == n_default, "unchecking python frames does not restore the table")
    page.select_option("#ops-group", "shape")
    check_rows_against_torch(page, ka["by_shape"], lambda t: (t["key"], t["input_shapes"].replace(" ", "")),
                             "by operator + input shapes", shapes=True)
    shoot(page, "view_ops_by_shape.png")
    page.select_option("#ops-group", "name")
    page.fill("#view-operators .tp-search", "conv2d")
    names = [c[0] for c in table_cells(page, "operators-table")]
    check(names and all("conv2d" in n.lower() for n in names), f"search conv2d: {names}")
    page.click("#operators-table tbody tr:first-child td:first-child")
    opened = page.evaluate("Array.from(document.querySelectorAll('#ops-stacks details[open]')).map(d => d.dataset.op)")
    check(opened == [names[0]], f"clicking {names[0]} opened the stacks of {opened}")
    frames = page.evaluate("Array.from(document.querySelectorAll('#ops-stacks details[open] li')).map(l => l.textContent)")
    check(any(".py(" in f for f in frames), f"no file(line) frame in the stacks of {names[0]}: {frames[:5]}")
    page.evaluate("document.getElementById('ops-stacks').scrollIntoView()")
    shoot(page, "view_ops_stacks.png")
    check(page.query_selector('svg[data-chart="ops-top"]') is not None, "no top-N chart")
    check(not any(h.startswith("TC ") for h in header(page, "operators-table")), "tensor-core columns on a CPU trace")
    check(page.get_attribute('#tabs button[data-view="kernels"]', "class") == "missing",
          "a CPU trace shows a Kernels tab with data")
    # modules
    page.click('#tabs button[data-view="modules"]')
    mods = table_cells(page, "modules-tree")
    want = {"TinyCNN_0", "Sequential_0", "Block_0", "Block_1", "Conv2d_0", "Conv2d_1", "ReLU_0", "ReLU_1",
            "MaxPool2d_0", "MaxPool2d_1", "Linear_0"}
    check({m[0].lstrip("\u25be\u25b8") for m in mods} == want, f"module tree: {[m[0] for m in mods]}")
    check(all(m[1] == "3" for m in mods), f"module calls: {[m[1] for m in mods]}")
    check(not any(h.startswith("Device") for h in header(page, "modules-tree")),
          f"device columns in the module tree of a CPU trace: {header(page, 'modules-tree')}")
    # the module timeline: a bar per call (3 steps x 11 modules), nested (a Conv2d below its Block)
    bars = page.evaluate("""Array.from(document.querySelectorAll('svg[data-chart="modules-timeline"] rect.bar'))
        .map(r => [r.dataset.module, +r.getAttribute('x'), +r.getAttribute('y'), +r.getAttribute('width')])""")
    check(len(bars) == 33, f"module timeline: {len(bars)} bars, 33 calls")
    by = collections.defaultdict(list)
    for m, x, y, w in bars:
        by[m].append((x, y, w))
    ok = by["Block_0"] and by["Conv2d_0"] and all(
        any(bx <= cx + 0.01 and cx + cw <= bx + bw + 0.01 and cy > by_ for bx, by_, bw in by["Block_0"])
        for cx, cy, cw in by["Conv2d_0"])
    check(ok, f"module timeline: Conv2d_0's bars are not inside and below Block_0's: {by['Block_0']} {by['Conv2d_0']}")
    # its lanes are named as the Timeline names the thread (the trace's thread name), not "pid P tid T"
    lanes = page.evaluate("Array.from(document.querySelectorAll('svg[data-chart=\"modules-timeline\"] text.lane'))"
                          ".map(t => [t.textContent, +t.dataset.pid, +t.dataset.tid])")
    rows = page.evaluate("JSON.parse(document.getElementById('trainprof-data').textContent).timeline.rows")
    named = {(r["pid"], r["tid"]): r["label"] for r in rows if r["kind"] == "thread"}
    check(lanes and all((p_, t_) in named and text == f"{named[(p_, t_)]} \u00b7 pid {p_}" for text, p_, t_ in lanes),
          f"module timeline lanes {lanes} are not the threads' names {named}")
    page.evaluate("document.getElementById('modules-timeline-card').scrollIntoView()")
    shoot(page, "view_ops_modules_timeline.png")
    page.click('#modules-tree tr[data-depth="0"] button')
    check(len(table_cells(page, "modules-tree")) == 1, "collapsing the root does not hide its modules")
    check(not errors, f"torch page: {errors}")
    page.close()
    modules_gpu_page(browser, tmp, os.path.join(out, "full.pt.trace.json"))


def tensor_list_page(browser, tmp):
    """Shape mode on a torch run whose operators take tensor lists (the
    analyze test's run: aten::cat, aten::stack, Adam(foreach=True)): the rows
    key_averages(group_by_input_shape=True) has, a TensorList as []."""
    sys.path.insert(0, os.path.join(SRC, "tests", "analyze"))
    from test_views_ops_torch import run_tensor_list_run
    out = os.path.join(tmp, "lists")
    os.makedirs(out)
    run_tensor_list_run(out)
    ka = json.load(open(os.path.join(out, "lists.key_averages.json")))
    page, errors = open_view(browser, html_of(os.path.join(out, "lists.pt.trace.json"), os.path.join(tmp, "lists.html")),
                             "operators")
    page.select_option("#ops-group", "shape")
    for op in ("aten::cat", "aten::_foreach_add_"):
        page.fill("#view-operators .tp-search", op)
        got = sorted((c[0], c[1].replace(" ", ""), c[3]) for c in table_cells(page, "operators-table") if c[0] == op)
        want = sorted((t["key"], t["input_shapes"].replace(" ", ""), f"{t['count']:,}") for t in ka if t["key"] == op)
        check(got == want and got, f"shape mode {op}: page {got}, torch {want}")
    page.fill("#view-operators .tp-search", "aten::")
    shoot(page, "view_ops_tensor_lists.png")
    check(not errors, f"tensor list page: {errors}")
    page.close()


def modules_gpu_page(browser, tmp, trace):
    """The torch run given a kernel in the middle of every aten::conv2d, aten::addmm
    and aten::mm call (no GPU fixture has nn.Module frames): the module tree's
    device columns, device self where the module's own operators launched."""
    doc = json.load(open(trace))
    corr = 0
    for e in list(doc["traceEvents"]):
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["name"] in ("aten::conv2d", "aten::addmm", "aten::mm"):
            corr += 1
            mid = e["ts"] + e["dur"] / 2
            doc["traceEvents"] += [
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": e["pid"], "tid": e["tid"],
                 "ts": mid, "dur": 0.001, "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": "fake_gemm", "pid": 0, "tid": 7, "ts": mid + 5, "dur": 100,
                 "args": {"correlation": corr, "device": 0, "stream": 7}}]
    gpu = os.path.join(tmp, "mods_gpu.json")
    json.dump(doc, open(gpu, "w"))
    page, errors = open_view(browser, html_of(gpu, os.path.join(tmp, "mods_gpu.html")), "modules")
    head = header(page, "modules-tree")
    check("Device self" in head and "Device total" in head, f"module tree columns with kernels: {head}")
    cells = {c[0].lstrip("\u25be\u25b8"): c for c in table_cells(page, "modules-tree")}
    i_self = head.index("Device self")
    # forward's convolutions run in Conv2d_k, the head's addmm in Linear_0: their own device time
    # (backward's mm runs on the autograd thread, in no module)
    want = fmt_durs(page, [300000, 0])
    check([cells.get("Conv2d_0", [""] * 9)[i_self], cells.get("Block_0", [""] * 9)[i_self]] == want,
          f"device self of Conv2d_0 and Block_0: {[cells.get(m) for m in ('Conv2d_0', 'Block_0')]}, want {want}")
    shoot(page, "view_ops_modules.png")
    check(not errors, f"modules gpu page: {errors}")
    page.close()


def gpu_page(browser, tmp, name):
    src = os.path.join(FIX, "kineto", name)
    if not os.path.exists(src):
        print("SKIP part: no", src)
        return
    path = html_of(src, os.path.join(tmp, "gpu.html"))
    rep = json.loads(subprocess.run([BIN, "report", "--json", "--top", "0", src], check=True, capture_output=True,
                                    text=True).stdout)
    dev = {}
    for t in rep["tables"]:
        if t["table"] == "gpu":
            for o in t["ops"]:
                c, s = dev.get(o["name"], (0, 0))
                dev[o["name"]] = (c + o["calls"], s + o["total_us"])
    # the issue's window: the Kernels view uses it all (browser_charts checks 1,200 px too)
    page, errors = open_view(browser, path, "kernels", width=1400)
    shoot(page, "view_ops_kernels.png")
    check_layout(page, name + " kernels")
    head = header(page, "kernels-by-name")
    check("Tensor cores used" in head, f"kernel columns: {head}")
    i_calls, i_total = head.index("Calls"), head.index("Total")
    names = page.evaluate("Array.from(document.querySelectorAll('#kernels-by-name tbody tr td:first-child')).map(td => td.title || td.textContent)")
    cells = table_cells(page, "kernels-by-name")
    want = fmt_durs(page, [dev.get(n, (0, 0))[1] * 1000 for n in names])
    bad = 0
    for n, c, w in zip(names, cells, want):
        if n not in dev or c[i_calls] != f"{dev[n][0]:,}" or c[i_total] != w:
            bad += 1
            check(False, f"kernel {n[:60]}: page {c[i_calls]} {c[i_total]}, report --json {dev.get(n)} {w}")
    check(len(cells) > 10, f"only {len(cells)} kernels")
    print(f"{name}: {len(cells)} kernels on the page compared with report --json, {bad} differ")
    # issue 31: chart labels a GPU engineer tells apart, the full name on hover
    labs = page.evaluate("Array.from(document.querySelectorAll('svg[data-chart=\"kernels-top\"] text.lbl'))"
                         ".map(t => [t.firstChild.nodeValue, t.querySelector('title').textContent])")
    check(len({a for a, _ in labs}) == len(labs), f"two kernels with one label: {[a for a, _ in labs]}")
    check(all(len(a) <= 38 for a, _ in labs), f"a label longer than its room: {labs}")
    check(all(not a.startswith("void ") and "::" not in a for a, _ in labs), f"labels keep namespaces: {labs[:3]}")
    check(all(full in dev for _, full in labs), "a label's hover is not the kernel's full name")
    same = ["void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >"
            "(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)",
            "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, at::detail::Array<char*, 3> >"
            "(int, at::native::MulFunctor<float>, at::detail::Array<char*, 3>)"] + [
            f"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, {n}, {b}, 1>(float, float, float, float, "
            "cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, float*, float const*, float)"
            for n, b in (("512", "true"), ("512", "false"), ("256", "true"))]
    got = page.evaluate("names => TP.chartLabels(names, 38)", same)
    check(len(set(got)) == len(got) and all(len(g) <= 38 for g in got), f"labels of look-alike kernels: {got}")
    check("AddFunctor<float>" in got[0] and "MulFunctor<float>" in got[1], f"the functor was cut: {got[:2]}")
    check(all(k in g for g, k in zip(got[2:], ("512, true", "512, false", "256, true"))), f"template arguments cut: {got[2:]}")
    cfg = header(page, "kernels-by-config")
    check(all(h in cfg for h in ("Operator", "Grid", "Block", "Regs", "Smem", "TC", "Op TC", "Blk/SM", "Occ.")),
          f"config table columns: {cfg}")
    wide = page.evaluate("(() => { const w = document.getElementById('kernels-by-config').parentElement;"
                         " return [w.scrollWidth, w.clientWidth]; })()")
    check(wide[0] <= wide[1] + 1, f"the launch-configuration table scrolls sideways: {wide[0]} px in {wide[1]} px")
    ops_of = [c[1] for c in table_cells(page, "kernels-by-config")]
    check(ops_of and all(ops_of), "a kernel row without its launching operator")
    page.evaluate("document.getElementById('kernels-config').scrollIntoView()")
    shoot(page, "view_ops_kernels_config.png")
    page.click('#tabs button[data-view="operators"]')
    check("Device self" in header(page, "operators-table"), "no device columns on a GPU trace")
    # the TensorBoard plugin's tensor-core columns: aten::mm runs on tensor cores in this trace
    head = header(page, "operators-table")
    check(all(h in head for h in ("TC eligible", "TC self %", "TC total %")), f"no tensor-core columns: {head}")
    page.fill("#view-operators .tp-search", "aten::mm")
    mm = [c for c in table_cells(page, "operators-table") if c[0] == "aten::mm"]
    check(mm and mm[0][head.index("TC eligible")] == "yes" and mm[0][head.index("TC self %")] not in ("-", "0.00%"),
          f"aten::mm's tensor-core cells: {mm}")
    page.fill("#view-operators .tp-search", "")
    shoot(page, "view_ops_operators_gpu.png")
    check_layout(page, name + " operators")
    for key in ("overview", "memory", "modules"):
        page.click(f'#tabs button[data-view="{key}"]')
        check_layout(page, f"{name} {key}")
    check(not errors, f"{name}: {errors}")
    page.close()


def run_dir_page(browser, tmp):
    example = os.path.join(SRC, "examples", "python", "train_cnn.py")
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    log = os.path.join(tmp, "runs")
    res = subprocess.run([sys.executable, example, "--max_steps", "30", "--batch_size", "16", "--num_workers", "0",
                          "--enable_profiling", "True", "--profile_steps", "3", "--profiling.wait", "1",
                          "profiling.warmup=1", f"--profiling.log_dir={log}", "--profiling.torch_ops", "true"],
                         capture_output=True, text=True, env=env, timeout=300)
    check(res.returncode == 0, f"train_cnn.py: {res.stderr[-2000:]}")
    if res.returncode:
        return
    (run,) = [os.path.join(log, d) for d in os.listdir(log)]
    page, errors = open_view(browser, os.path.join(run, "report.html"), "operators")
    names = [c[0] for c in table_cells(page, "operators-table")]
    check("aten::conv2d" in names and "aten::addmm" in names, f"the run's page lacks torch operators: {names[:20]}")
    check(not errors, f"run page: {errors}")
    page.close()


LIGHTNING_RUN = """
import sys, torch, lightning as L
from lightning.pytorch.profilers import PyTorchProfiler
class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU())
        self.head = torch.nn.Linear(16, 2)
    def training_step(self, b, i):
        x, y = b
        return torch.nn.functional.cross_entropy(self.head(self.body(x)), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
ds = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
prof = PyTorchProfiler(dirpath=sys.argv[1], filename="pl", export_to_chrome=True,
                       schedule=torch.profiler.schedule(wait=1, warmup=1, active=3))
L.Trainer(max_steps=8, profiler=prof, logger=False, enable_checkpointing=False, enable_progress_bar=False,
          enable_model_summary=False, accelerator="cpu").fit(Net(), torch.utils.data.DataLoader(ds, batch_size=8))
"""


def lightning_page(browser, tmp):
    try:
        import lightning  # noqa: F401
    except ImportError:
        print("SKIP part: lightning is not installed")
        return
    out = os.path.join(tmp, "pl")
    res = subprocess.run([sys.executable, "-c", LIGHTNING_RUN, out], capture_output=True, text=True, timeout=300)
    check(res.returncode == 0, f"lightning run: {res.stderr[-2000:]}")
    traces = [f for f in os.listdir(out) if f.endswith(".json")] if res.returncode == 0 else []
    check(len(traces) == 1, f"lightning traces: {traces}")
    if len(traces) != 1:
        return
    ev = json.load(open(os.path.join(out, traces[0])))["traceEvents"]
    hooks = collections.Counter(e["name"] for e in ev if e.get("ph") == "X" and e["name"].startswith("[pl][profile]"))
    page, errors = open_view(browser, html_of(os.path.join(out, traces[0]), os.path.join(tmp, "pl.html")), "modules")
    head = header(page, "hooks-table")
    rows = table_cells(page, "hooks-table")
    shown = {}
    for r in rows:
        owner, hook = r[head.index("Owner")], r[head.index("Hook")]
        name = "[pl][profile]" + ("" if owner == "(Trainer)" else f"[{owner}]") + hook
        shown[name] = int(r[head.index("Calls")].replace(",", ""))
    check(shown == dict(hooks), f"hooks on the page {shown} vs the trace {dict(hooks)}")
    check(any(r[head.index("Owner")] == "LightningModule" and r[head.index("Hook")] == "Net.training_step"
              for r in rows) or any(r[head.index("Owner")] == "Strategy" for r in rows), f"no owners: {rows[:3]}")
    mods = {c[0].lstrip("\u25be\u25b8"): c[1] for c in table_cells(page, "modules-tree")}
    check({"torch.nn.modules.container.Sequential: body", "torch.nn.modules.linear.Linear: head"} <= set(mods),
          f"lightning module tree: {mods}")
    depth = page.evaluate("Array.from(document.querySelectorAll('#modules-tree tbody tr')).map(tr => tr.dataset.depth)")
    check("1" in depth, f"the Sequential's children are not nested: {depth}")
    shoot(page, "view_ops_lightning.png", full_page=True)
    check(not errors, f"lightning page: {errors}")
    page.close()


def hostile_page(browser, tmp):
    names = ["<!--<script>", "</script><b>bold</b>", 'q"uote\\back\\\\slash', "line\u2028sep\u2029end", "&amp;"]
    ev = []
    for i, n in enumerate(names):
        ev.append({"ph": "X", "cat": "cpu_op", "name": n, "ts": i * 10, "dur": 5, "pid": 1, "tid": 1,
                   "args": {"Input Dims": [[1, 2]]}})
        ev.append({"ph": "X", "cat": "python_function", "name": "nn.Module: " + n, "ts": i * 10, "dur": 6,
                   "pid": 1, "tid": 1})
    trace = os.path.join(tmp, "hostile.json")
    json.dump({"traceEvents": ev}, open(trace, "w"))
    page, errors = open_view(browser, html_of(trace, os.path.join(tmp, "hostile.html")), "operators")
    shown = {c[0] for c in table_cells(page, "operators-table")}
    check(set(names) <= shown, f"hostile names shown as {shown}")
    check(page.query_selector("#view-operators b") is None, "a name became markup")
    page.click('#tabs button[data-view="modules"]')
    mods = {c[0] for c in table_cells(page, "modules-tree")}
    check(set(names) <= {m.lstrip("\u25be\u25b8") for m in mods}, f"hostile module names: {mods}")
    check(not errors, f"hostile page: {errors}")
    page.close()


def main():
    tmp = tempfile.mkdtemp(prefix="tp_view_ops_")
    with sync_playwright() as p:
        browser = launch(p)
        try:
            torch_page(browser, tmp)
            tensor_list_page(browser, tmp)
            gpu_page(browser, tmp, "trace_filter__sampled_rank-0.json.gz")
            run_dir_page(browser, tmp)
            lightning_page(browser, tmp)
            hostile_page(browser, tmp)
        finally:
            browser.close()
    subprocess.run(["rm", "-rf", tmp])
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
