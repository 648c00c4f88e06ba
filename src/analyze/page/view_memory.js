'use strict';
/* view_memory.js - the Memory view: from profile_memory traces, the
 * allocated and reserved curves per device (drag across one to choose a time
 * range: the tables below then show that range), the peak with what was
 * alive at it, the per-operator statistics and the allocation/free pairs;
 * and trainprof's own samples of a run directory (RSS, system memory, each
 * GPU's allocated / reserved / peak). */
(function () {
  const el = TP.el;

  /* one chart of the samples; data-ymin/ymax in the file's units (MB, %, GB) */
  function samplesChart(host, name, ds, series, scale, kind, title) {
    const [lo, hi] = TP.dsRange(ds, series.map(s => s.v));
    if (!isFinite(lo)) return null;
    const fmt = kind === 'bytes' ? v => TP.fmtBytes(v) : v => TP.fmtPct(v);
    return TP.lineChart(host, {
      series: series.map(s => TP.dsSeries(ds, s.v, s.label, scale)), yKind: kind, yTitle: title, xTitle: 'step', xInt: true,
      attrs: { 'data-chart': name, 'data-columns': ds.x0.length, 'data-points': ds.points, 'data-ymin': lo, 'data-ymax': hi },
      readout: (s, i) => 'step ~' + Math.round(s.x[i]) + ': ' + s.label + ' mean ' + fmt(s.y[i]) + ' (min ' + fmt(s.lo[i]) + ', max ' + fmt(s.hi[i]) + ')'
    });
  }

  function samples(root, ds, devices) {
    const c = TP.card(root, 'trainprof\'s memory samples', 's-mem');
    el('p', { class: 'note' }, c, 'Sampled by trainprof during the run (memory_profile.json), ' + TP.fmtNum(ds.points) + ' samples.');
    samplesChart(c, 'rss', ds, [{ v: 0, label: 'RSS' }], 1048576, 'bytes', 'process RSS');
    samplesChart(c, 'system', ds, [{ v: 1, label: 'system memory used' }], 1, 'pct', 'system memory');
    const gs = [];
    devices.forEach((d, i) => gs.push({ v: 2 + 3 * i, label: d + ' allocated' }, { v: 3 + 3 * i, label: d + ' reserved' }, { v: 4 + 3 * i, label: d + ' peak' }));
    if (gs.length) samplesChart(c, 'gpu', ds, gs, 1073741824, 'bytes', 'GPU memory');
    if (ds.width > 1) el('p', { class: 'note' }, c, 'Each point is ' + ds.width + ' consecutive samples: the line is their mean, the band their min and max.');
  }

  const PAIR_COLS = [
    { key: 'op', label: 'operator', align: 'l' }, { key: 'device', label: 'device', align: 'l' },
    { key: 'bytes', label: 'size', fmt: v => TP.fmtBytes(v) },
    { key: 't_alloc', label: 'allocated at', fmt: v => TP.fmtDur(v) },
    { key: 't_free', label: 'released at', fmt: v => v === null ? 'not released' : TP.fmtDur(v) },
    { key: 'life', label: 'lifetime', fmt: v => v === null ? '-' : TP.fmtDur(v) }
  ];
  const OP_COLS = [
    { key: 'name', label: 'operator', align: 'l' },
    { key: 'allocs', label: 'allocations' }, { key: 'alloc_bytes', label: 'allocated', fmt: v => TP.fmtBytes(v) },
    { key: 'frees', label: 'frees' }, { key: 'free_bytes', label: 'freed', fmt: v => TP.fmtBytes(v) },
    { key: 'self_inc', label: 'self increase', fmt: v => TP.fmtBytes(v), title: 'bytes allocated minus freed by the operator itself (torch: self_cpu_memory_usage)' },
    { key: 'total_inc', label: 'total increase', fmt: v => v === null ? '-' : TP.fmtBytes(v), title: 'the same with its children (torch: cpu_memory_usage); whole trace only' }
  ];

  function traced(root, d) {
    const names = d.ops.map(o => o.name);
    const opName = i => i < 0 ? '(no operator)' : names[i];
    const devs = d.devices_traced;
    const pairs = d.pairs.map(p => ({ device: devs[p[0]].name, dev: p[0], op: opName(p[1]), bytes: p[2], t_alloc: p[3], t_free: p[4],
      life: p[4] === null ? null : p[4] - p[3] }));
    const top = TP.card(root, 'Memory over time', 'mem-curves');
    el('p', { class: 'note' }, top, TP.fmtNum(d.n_events) + ' [memory] events. Times are from the start of the trace. Drag across a chart to choose a time range; the tables below follow it.');
    const sel = el('div', { class: 'readout', id: 'mem-range' }, top, 'Range: whole trace.');
    const peakCard = TP.card(root, 'Peak', 'mem-peak');
    const opCard = TP.card(root, 'Operators', 'mem-ops');
    const opNote = el('p', { class: 'note' }, opCard, 'Each [memory] event is charged to the innermost host operator running on its thread; total increase adds its children\'s.');
    const opTable = TP.table(opCard, OP_COLS, d.ops.filter(o => o.allocs || o.frees || o.total_inc), { id: 'mem-ops-table', sortBy: 'alloc_bytes', search: true, limit: 25 });
    const pairCard = TP.card(root, 'Allocations', 'mem-pairs');
    el('p', { class: 'note' }, pairCard, TP.fmtNum(d.n_pairs) + ' allocations matched to their release by device and address; listed: the ' +
      Math.min(200, d.n_pairs) + ' largest and those alive at each peak. Memory allocated before the profiler started has no allocation event.');
    const pairTable = TP.table(pairCard, PAIR_COLS, pairs, { id: 'mem-pairs-table', sortBy: 'bytes', search: true, limit: 25 });
    function range(a, b) {
      if (a === null) {
        sel.textContent = 'Range: whole trace.';
        delete sel.dataset.a; delete sel.dataset.b;
        pairTable.setRows(pairs);
        opTable.setRows(d.ops.filter(o => o.allocs || o.frees || o.total_inc));
        opNote.textContent = 'Each [memory] event is charged to the innermost host operator running on its thread; total increase adds its children\'s.';
        return;
      }
      sel.textContent = 'Range: ' + TP.fmtDur(a) + ' – ' + TP.fmtDur(b) + ' (click the chart to clear).';
      sel.dataset.a = a; sel.dataset.b = b;
      pairTable.setRows(pairs.filter(p => p.t_alloc <= b && (p.t_free === null || p.t_free >= a)));
      if (!d.events) { opNote.textContent = 'Too many events to filter the operators by range: the whole trace is shown.'; return; }
      const st = new Map();
      for (const e of d.events) {
        if (e[0] < a || e[0] > b) continue;
        let s = st.get(e[2]);
        if (!s) st.set(e[2], s = { name: opName(e[2]), allocs: 0, alloc_bytes: 0, frees: 0, free_bytes: 0, self_inc: 0, total_inc: null });
        if (e[1] > 0) { s.allocs++; s.alloc_bytes += e[1]; } else if (e[1] < 0) { s.frees++; s.free_bytes -= e[1]; }
        s.self_inc += e[1];
      }
      opTable.setRows([...st.values()]);
      opNote.textContent = 'Events in the range only (total increase needs whole operators: shown for the whole trace).';
    }
    devs.forEach((dv, k) => {
      const x = dv.curve.map(p => p[0]);
      const series = [{ label: dv.name + ' allocated', x: x, y: dv.curve.map(p => p[1]) }];
      if (dv.curve.some(p => p[2] > 0)) series.push({ label: dv.name + ' reserved', x: x, y: dv.curve.map(p => p[2]) });
      el('h3', {}, top, dv.name);
      TP.lineChart(top, { series: series, yKind: 'bytes', xKind: 'ns', yMin: 0, steps: true, yTitle: 'memory', xTitle: 'time', onSelect: range,
        attrs: { 'data-chart': 'mem_' + k, 'data-device': dv.name, 'data-peak': dv.peak_bytes, 'data-points': dv.curve.length },
        readout: (s, i) => s.label + ' at ' + TP.fmtDur(s.x[i]) + ': ' + TP.fmtBytes(s.y[i]) });
      const alive = pairs.filter(p => p.dev === k && p.t_alloc <= dv.peak_t && (p.t_free === null || p.t_free > dv.peak_t));
      const s = el('div', { class: 'stats' }, peakCard);
      const add = (lab, v, id) => { const b = el('div', { class: 'stat', 'data-stat': id }, s); el('b', {}, b, v); b.appendChild(document.createTextNode(lab)); };
      add(dv.name + ' peak allocated', TP.fmtBytes(dv.peak_bytes), 'peak_' + k);
      add('at', TP.fmtDur(dv.peak_t), 'peak_t_' + k);
      add('alive at the peak (listed)', TP.fmtNum(alive.length) + ' / ' + TP.fmtBytes(alive.reduce((a, p) => a + p.bytes, 0)), 'alive_' + k);
      TP.table(peakCard, PAIR_COLS, alive, { id: 'mem-peak-table-' + k, sortBy: 'bytes', limit: 10 });
    });
    if (d.left_out && d.left_out.length) el('p', { class: 'note' }, top, 'Left out: ' + d.left_out.join('; ') + '.');
  }

  TP.view({
    key: 'memory', title: 'Memory', order: 50,
    missing: 'no [memory] events (profile with profile_memory=True) and no memory_profile.json',
    render(root, d) {
      if (d.n_events) traced(root, d);
      if (d.samples) samples(root, d.samples, d.devices || []);
    }
  });
})();
