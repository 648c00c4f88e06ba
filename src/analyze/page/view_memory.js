'use strict';
/* view_memory.js - the Memory view: from profile_memory traces, one device
 * at a time (a selector: CPU, cuda:0, ...; the first GPU first, as the
 * TensorBoard plugin), its allocated and reserved curves (drag across to
 * choose a time range: the tables below then show that range), the peak
 * with what was alive at it, the per-operator statistics and the
 * allocation/free pairs (with a size filter; an allocation of aten::empty*
 * names the operator that called it);
 * of a page of several ranks, one rank at a time (TP.rankPicker, as the
 * Overview), every title and label naming it (issue 31: ranks are not merged);
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
    { key: 'op', label: 'operator', align: 'l', title: 'the operator that allocated; an allocation of aten::empty* (torch\'s malloc) is shown as "caller (aten::empty…)"' },
    { key: 'bytes', label: 'size', fmt: v => TP.fmtBytes(v) },
    { key: 't_alloc', label: 'allocated at', fmt: v => TP.fmtDur(v) },
    { key: 't_free', label: 'released at', fmt: v => v === null ? 'not released' : TP.fmtDur(v) },
    { key: 'life', label: 'lifetime', fmt: v => v === null ? '-' : TP.fmtDur(v) }
  ];
  const OP_COLS = [
    { key: 'name', label: 'operator', align: 'l' },
    { key: 'allocs', label: 'allocations' }, { key: 'alloc_bytes', label: 'allocated', fmt: v => TP.fmtBytes(v) },
    { key: 'frees', label: 'frees' }, { key: 'free_bytes', label: 'freed', fmt: v => TP.fmtBytes(v) },
    { key: 'self_inc', label: 'self increase', fmt: v => TP.fmtBytes(v), title: 'bytes allocated minus freed by the operator itself (torch: self_cpu_memory_usage / self_cuda_memory_usage)' },
    { key: 'total_inc', label: 'total increase', fmt: v => v === null ? '-' : TP.fmtBytes(v), title: 'the same with its children (torch: cpu_memory_usage / cuda_memory_usage); whole trace only' }
  ];
  const UNITS = [['B', 1], ['KiB', 1024], ['MiB', 1048576], ['GiB', 1073741824]];
  const OP_NOTE = 'Each [memory] event of this device is charged to the innermost host operator running on its thread; total increase adds its children\'s.';

  /* the traced memory: several ranks one at a time (each a set of device
   * slots of devices_traced), else all devices */
  function traced(root, d) {
    const names = d.op_names;
    const opName = i => i < 0 ? '(no operator)' : names[i];
    /* as the TensorBoard plugin: an allocation of aten::empty* names the operator that called it */
    const pairOp = (op, by) => by >= 0 ? names[by] + ' (' + opName(op) + ')' : opName(op);
    const pairs = d.pairs.map(p => ({ dev: p[0], op: pairOp(p[1], p[5]), bytes: p[2], t_alloc: p[3], t_free: p[4],
      life: p[4] === null ? null : p[4] - p[3], called_by: p[5] >= 0 ? names[p[5]] : null }));
    const sizes = d.devices_traced.map(() => ({ min: '', max: '', unit: '' }));  /* per device, kept across ranks */
    const ranks = d.ranks || [];
    if (ranks.length > 1) {
      const pick = el('div', { id: 'mem-ranks' }, root);
      const box = el('div', {}, root);
      TP.rankPicker(pick, ranks.map(r => r.rank), i => { box.textContent = ''; rankView(box, d, ranks[i], pairs, sizes, opName); }, 'mem-rank');
    } else {
      rankView(root, d, ranks[0] || null, pairs, sizes, opName);
    }
  }

  /* One rank's devices (r: of d.ranks; null: the page's only rank, not named). */
  function rankView(root, d, r, pairs, sizes, opName) {
    const devs = d.devices_traced;
    const mineK = r ? r.devices : devs.map((dv, k) => k);
    const devOps = k => devs[k].ops.map(r => ({ name: opName(r[0]), allocs: r[1], alloc_bytes: r[2], frees: r[3], free_bytes: r[4], self_inc: r[5], total_inc: r[6] }));
    const start = r ? r.default_device : d.default_device;
    let dev = devs[start] ? start : mineK[0], rng = null;
    const rk = r ? ' (rank ' + r.rank + ')' : '', tag = r ? 'rank ' + r.rank + ' \u00b7 ' : '';
    const nEv = r ? r.n_events : d.n_events;

    const top = TP.card(root, 'Memory over time' + rk, 'mem-curves');
    el('p', { class: 'note', id: 'mem-count' }, top, TP.fmtNum(nEv) + ' [memory] events' + (r ? ' of rank ' + r.rank : '') + ' on ' + mineK.length + ' device' + (mineK.length > 1 ? 's' : '') +
      '. Times are from the start of ' + (r ? 'rank ' + r.rank + '\'s trace' : 'the trace') + '. Drag across the chart to choose a time range; the tables below follow it.');
    const ctl = el('div', { class: 'controls', style: 'display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center;margin:6px 0' }, top);
    const dlab = el('label', {}, ctl, 'Device ');
    const dsel = el('select', { id: 'mem-device' }, dlab);
    /* CPU first, then each kind of device by its number (the plugin's order) */
    mineK.slice().sort((a, b) => (devs[a].type - devs[b].type) || (devs[a].id - devs[b].id)).forEach(k => {
      const o = el('option', { value: k }, dsel, devs[k].name + ' (' + TP.fmtNum(devs[k].events) + ' events, peak ' + TP.fmtBytes(devs[k].peak_bytes) + ')');
      if (k === dev) o.selected = true;
    });
    if (mineK.length < 2) dsel.disabled = true;
    const sel = el('div', { class: 'readout', id: 'mem-range' }, top, 'Range: whole trace.');
    const chartBox = el('div', { id: 'mem-chart' }, top);
    const peakCard = TP.card(root, 'Peak' + rk, 'mem-peak');
    const peakBox = el('div', {}, peakCard);
    const opCard = TP.card(root, 'Operators' + rk, 'mem-ops');
    const opNote = el('p', { class: 'note' }, opCard, OP_NOTE);
    const opTable = TP.table(opCard, OP_COLS, devOps(dev), { id: 'mem-ops-table', sortBy: 'alloc_bytes', search: true, limit: 25 });
    const pairCard = TP.card(root, 'Allocations' + rk, 'mem-pairs');
    const pairNote = el('p', { class: 'note', id: 'mem-pairs-note' }, pairCard);
    function notePairs() {
      const mine = pairs.filter(p => p.dev === dev).length;
      pairNote.textContent = TP.fmtNum(d.n_pairs_device[dev]) + ' allocations of ' + tag + devs[dev].name +
        ' matched to their release by device and address; listed: ' + (d.pairs_all ? 'all of them' : TP.fmtNum(mine) + ' of this device, its 200 largest and those alive at its peak') +
        '. Memory allocated before the profiler started has no allocation event. An allocation made by aten::empty, aten::empty_strided … (torch\'s malloc) ' +
        'names the operator that called it: "caller (aten::empty)". The size filter keeps the sizes from min to max, both included.';
    }
    const fctl = el('div', { class: 'controls', id: 'mem-size', style: 'display:flex;flex-wrap:wrap;gap:6px 10px;align-items:center;margin:6px 0' }, pairCard);
    const minIn = el('input', { type: 'number', id: 'mem-size-min', min: 0, step: 'any', placeholder: '0', style: 'width:90px' }, el('label', {}, fctl, 'Size from '));
    const maxIn = el('input', { type: 'number', id: 'mem-size-max', min: 0, step: 'any', style: 'width:90px' }, el('label', {}, fctl, 'to '));
    const unitSel = el('select', { id: 'mem-size-unit' }, fctl);
    for (const [u, m] of UNITS) el('option', { value: m }, unitSel, u);
    const sizeNote = el('span', { class: 'note', id: 'mem-size-note' }, fctl);
    const pairTable = TP.table(pairCard, PAIR_COLS, [], { id: 'mem-pairs-table', sortBy: 'bytes', search: true, limit: 25 });

    /* a bound of the size filter in bytes; null: none (empty or not a number) */
    function bound(inp) {
      const v = inp.value.trim();
      const x = v === '' ? NaN : Number(v);
      return isFinite(x) ? Math.max(0, x) * Number(unitSel.value) : null;
    }
    function drawPairs() {
      let list = pairs.filter(p => p.dev === dev);
      if (rng) list = list.filter(p => p.t_alloc <= rng[1] && (p.t_free === null || p.t_free >= rng[0]));
      const lo = bound(minIn), hi = bound(maxIn);
      if (lo !== null) list = list.filter(p => p.bytes >= lo);
      if (hi !== null) list = list.filter(p => p.bytes <= hi);
      fctl.dataset.lo = lo === null ? '' : lo;
      fctl.dataset.hi = hi === null ? '' : hi;
      const unit = unitSel.options[unitSel.selectedIndex].textContent;
      sizeNote.textContent = lo === null && hi === null ? '' : lo !== null && hi !== null && lo > hi ? 'min is above max: no allocation' :
        TP.fmtNum(list.length) + ' allocation' + (list.length === 1 ? '' : 's') + ' of ' + (lo === null ? '0' : minIn.value.trim()) + ' ' + unit +
        (hi === null ? ' or more' : ' to ' + maxIn.value.trim() + ' ' + unit) + (rng ? ' in the range' : '');
      pairTable.setRows(list);
    }
    function sizeChanged() {
      Object.assign(sizes[dev], { min: minIn.value, max: maxIn.value, unit: unitSel.value });
      drawPairs();
    }
    for (const inp of [minIn, maxIn]) inp.addEventListener('input', sizeChanged);
    unitSel.addEventListener('change', sizeChanged);

    function range(a, b) {
      rng = a === null ? null : [a, b];
      drawPairs();
      if (a === null) {
        sel.textContent = 'Range: whole trace.';
        delete sel.dataset.a; delete sel.dataset.b;
        opTable.setRows(devOps(dev));
        opNote.textContent = OP_NOTE;
        return;
      }
      sel.textContent = 'Range: ' + TP.fmtDur(a) + ' – ' + TP.fmtDur(b) + ' (click the chart to clear).';
      sel.dataset.a = a; sel.dataset.b = b;
      if (!d.events) { opNote.textContent = 'Too many events to filter the operators by range: the whole trace is shown.'; return; }
      const st = new Map();
      for (const e of d.events) {
        if (e[3] !== dev || e[0] < a || e[0] > b) continue;
        let s = st.get(e[2]);
        if (!s) st.set(e[2], s = { name: opName(e[2]), allocs: 0, alloc_bytes: 0, frees: 0, free_bytes: 0, self_inc: 0, total_inc: null });
        if (e[1] > 0) { s.allocs++; s.alloc_bytes += e[1]; } else if (e[1] < 0) { s.frees++; s.free_bytes -= e[1]; }
        s.self_inc += e[1];
      }
      opTable.setRows([...st.values()]);
      opNote.textContent = 'Events of this device in the range only (total increase needs whole operators: shown for the whole trace).';
    }

    function show(k) {
      dev = k;
      const dv = devs[k];
      chartBox.textContent = '';
      peakBox.textContent = '';
      const x = dv.curve.map(p => p[0]);
      const series = [{ label: tag + dv.name + ' allocated', x: x, y: dv.curve.map(p => p[1]) }];
      if (dv.curve.some(p => p[2] > 0)) series.push({ label: tag + dv.name + ' reserved', x: x, y: dv.curve.map(p => p[2]) });
      el('h3', {}, chartBox, tag + dv.name);
      TP.lineChart(chartBox, { series: series, yKind: 'bytes', xKind: 'ns', yMin: 0, steps: true, yTitle: 'memory', xTitle: r ? 'time (rank ' + r.rank + ')' : 'time', onSelect: range,
        attrs: { 'data-chart': 'mem_' + k, 'data-device': dv.name, 'data-rank': r ? r.rank : null, 'data-peak': dv.peak_bytes, 'data-points': dv.curve.length },
        readout: (s, i) => s.label + ' at ' + TP.fmtDur(s.x[i]) + ': ' + TP.fmtBytes(s.y[i]) });
      const alive = pairs.filter(p => p.dev === k && p.t_alloc <= dv.peak_t && (p.t_free === null || p.t_free > dv.peak_t));
      const s = el('div', { class: 'stats' }, peakBox);
      const add = (lab, v, id) => { const b = el('div', { class: 'stat', 'data-stat': id }, s); el('b', {}, b, v); b.appendChild(document.createTextNode(lab)); };
      add(tag + dv.name + ' peak allocated', TP.fmtBytes(dv.peak_bytes), 'peak_' + k);
      add('at', TP.fmtDur(dv.peak_t), 'peak_t_' + k);
      /* a count and a size: two tiles, each in its own unit */
      add('allocations alive at the peak (listed)', TP.fmtNum(alive.length), 'alive_' + k);
      add('held by them', TP.fmtBytes(alive.reduce((a, p) => a + p.bytes, 0)), 'alive_bytes_' + k);
      TP.table(peakBox, PAIR_COLS, alive, { id: 'mem-peak-table-' + k, sortBy: 'bytes', limit: 10 });
      /* the size filter as this device last had it (the plugin keeps one per device) */
      const largest = pairs.reduce((m, p) => p.dev === k && p.bytes > m ? p.bytes : m, 0);
      const st = sizes[k];
      unitSel.value = st.unit || String(Math.min(TP.bytesUnit(largest).div, 1073741824));
      minIn.value = st.min;
      maxIn.value = st.max;
      maxIn.placeholder = 'largest ' + TP.fmtBytes(largest);
      notePairs();
      range(null);
    }
    dsel.addEventListener('change', () => show(Number(dsel.value)));
    show(dev);
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
