'use strict';
/* view_overview.js - the Overview: the run at a glance (steps, GPUs,
 * utilization), the findings with their evidence, the step time split into
 * the TensorBoard plugin's categories per step and in total, and for a run
 * directory its own step time, throughput, zone breakdown, zones and
 * configuration. Charts keep data-* attributes (points, columns, axis
 * ranges) that the browser tests compare with the data. */
(function () {
  const el = TP.el;

  function parseOr(text) { try { return text ? JSON.parse(text) : null; } catch (e) { return null; } }

  /* A line chart of a downsampler (min-max band, mean line), with the data-*
   * attributes of the original series (points, columns, x and y range). */
  function dsChart(host, name, ds, series, o) {
    if (!ds) return null;
    const [lo, hi] = TP.dsRange(ds, series.map(s => s.v));
    const scale = o.scale || 1;
    const svg = TP.lineChart(host, Object.assign({
      series: series.map(s => TP.dsSeries(ds, s.v, s.label, scale)),
      attrs: { 'data-chart': name, 'data-rank': o.rank !== undefined ? o.rank : null, 'data-columns': ds.x0.length, 'data-points': ds.points, 'data-xmin': ds.x0[0],
        'data-xmax': ds.x1[ds.x1.length - 1], 'data-ymin': lo, 'data-ymax': hi },
      xTitle: 'step', xInt: true,
      readout: (s, i) => (o.rank !== undefined ? 'rank ' + o.rank + ' \u00b7 ' : '') + 'step ~' + Math.round(s.x[i]) + ': ' + s.label + ' mean ' + o.fmt(s.y[i]) + ' (min ' + o.fmt(s.lo[i]) + ', max ' + o.fmt(s.hi[i]) + ')'
    }, o));
    if (svg && ds.width > 1) el('p', { class: 'note' }, host, 'Each point is ' + ds.width + ' consecutive steps: the line is their mean, the band their min and max.');
    return svg;
  }

  function stats(host, D, d) {
    const add = (k, v, id) => { const s = el('div', { class: 'stat', 'data-stat': id }, host); el('b', {}, s, v); s.appendChild(document.createTextNode(k)); };
    const sm = parseOr(d.summary);
    const cat = d.categories;
    const rk = d.rank !== undefined ? ' (rank ' + d.rank + ')' : '';
    if (d.ranks) add('ranks', String(d.ranks.length), 'ranks');
    if (d.step_ms) add('steps' + rk, TP.fmtNum(d.step_ms.points), 'steps');
    if (cat) add('mean step' + rk, TP.fmtDur(cat.steps_ns / cat.n_steps), 'mean_step');
    if (sm) {
      if (sm.total_training_time_seconds !== undefined) add('training time', TP.fmtDur(sm.total_training_time_seconds * 1e9), 'training_time');
      if (sm.average_time_per_step !== undefined) add('mean step (run)', TP.fmtDur(sm.average_time_per_step * 1e9), 'mean_step_run');
      if (sm.samples_per_second) add('samples/s', TP.fmtNum(sm.samples_per_second), 'samples_per_second');
      if (sm.memory && sm.memory.peak_rss_bytes) add('peak RSS', TP.fmtBytes(sm.memory.peak_rss_bytes), 'peak_rss');
    }
    if (d.run_dir) add('trace windows', String(d.windows.length), 'windows');
    const g = d.gpu;
    if (g) {
      if (g.utilization_pct !== null) add('GPU utilization', TP.fmtPct(g.utilization_pct), 'gpu_utilization');
      if (g.sm_efficiency_pct !== null) add('est. SM efficiency', TP.fmtPct(g.sm_efficiency_pct), 'sm_efficiency');
      if (g.occupancy_pct !== null) add('est. achieved occupancy', TP.fmtPct(g.occupancy_pct), 'occupancy');
    }
  }

  function gpus(root, list, g) {
    if (!list.length) return;
    const c = TP.card(root, 'GPUs (deviceProperties: the machine\'s GPUs)', 'gpus');
    TP.table(c, [
      { key: 'name', label: 'GPU', align: 'l' },
      { key: 'memory_bytes', label: 'memory', fmt: v => TP.fmtBytes(v) },
      { key: 'sms', label: 'SMs' },
      { key: 'cc', label: 'compute capability', fmt: v => v },
      { key: 'used', label: 'used by', align: 'l', title: 'the ranks whose kernels ran on this GPU (args.device of their kernels)' }
    ], list.map(x => Object.assign({ cc: x.cc_major === null ? '-' : x.cc_major + '.' + x.cc_minor,
      name: (x.name || 'GPU') + ' #' + x.id,
      used: x.ranks && x.ranks.length ? x.ranks.map(r => 'rank ' + r).join(', ') : '-' }, x, { name: (x.name || 'GPU') + ' #' + x.id })), { id: 'gpu-table' });
    if (g) el('p', { class: 'note' }, c, 'GPU utilization: time in steps when any kernel, copy or set ran on a GPU, over the step time. ' +
      'Est. SM efficiency: at each instant the sum of min(blocks per SM, 1) of the kernels running on a GPU, capped at 1, over the step time of each GPU. ' +
      'Est. achieved occupancy: the kernels\' "est. achieved occupancy %", weighted by duration (as the TensorBoard plugin computed them).');
  }

  /* "the 3 traced steps #0–#2" (of rank r when given) */
  function stepsText(steps, rank) {
    if (!steps) return rank !== undefined ? 'rank ' + rank + '\'s trace' : 'the trace';
    return (rank !== undefined ? 'rank ' + rank + '\'s ' : 'the ') + TP.fmtNum(steps[2]) + ' traced step' + (steps[2] === 1 ? '' : 's') +
      ' #' + steps[0] + (steps[1] !== steps[0] ? '\u2013#' + steps[1] : '');
  }

  function findings(host, list, from, steps, runDir, rank) {
    if (!list.length) { el('p', { class: 'note' }, host, 'Nothing above the thresholds.'); return; }
    for (const f of list) {
      const d = el('div', { class: 'finding ' + f.severity, 'data-id': f.id, 'data-from': f.from || 'trace' }, host);
      el('b', {}, d, '[' + f.severity + '] ' + f.title + (f.share_pct > 0 ? ': ' + f.share_pct.toFixed(1) + '% of step time' : ''));
      el('div', { class: 'ev' }, d, f.evidence);
      /* where the statistic comes from: the whole run's files, or the traced steps only */
      el('div', { class: 'from note' }, d, 'From: ' + (f.from === 'run' ? 'the whole run (' + (f.id.startsWith('memory') || f.id === 'fragmentation' ?
        'memory_profile.json' : 'timing_profile.json') + ')' : stepsText(steps, rank) + ' only'));
      el('div', { class: 'try' }, d, 'Try: ' + f.suggestion);
    }
    if (from) el('p', { class: 'note', id: 'findings-from' }, host, 'Trace findings read from ' + from +
      (steps ? ', from ' + stepsText(steps, rank) : '') +
      (runDir ? '; the findings marked "the whole run" are of every step the run timed' : '') + '.');
  }

  function categories(root, cat, rank) {
    const rk = rank !== undefined ? ' (rank ' + rank + ')' : '';
    const c = TP.card(root, 'Step time by category' + rk, 'categories');
    el('p', { class: 'note' }, c, 'Each instant of a step counted once, in the highest category running: ' + cat.names.join(' > ') + '.');
    const ds = cat.steps;
    const cols = ds.x0.map((a, i) => a === ds.x1[i] ? String(a) : a + '\u2013' + ds.x1[i]);
    TP.stackedBars(c, {
      columns: cols, columnLabel: rank !== undefined ? 'rank ' + rank + ' \u00b7 step ' : 'step ', yKind: 'ns', fmt: v => TP.fmtDur(v),
      xTitle: 'step' + rk, yTitle: 'time per step',
      series: cat.names.map((n, v) => ({ label: n, values: ds.mean[v].map(x => x || 0) })),
      attrs: { 'data-chart': 'categories', 'data-points': ds.points, 'data-rank': rank !== undefined ? rank : null }
    });
    if (ds.width > 1) el('p', { class: 'note' }, c, 'Each bar is the mean of ' + ds.width + ' consecutive steps.');
    el('h3', {}, c, (rank !== undefined ? 'Rank ' + rank + ' total (' : 'Run total (') + TP.fmtNum(cat.n_steps) + (cat.n_steps === 1 ? ' step, ' : ' steps, ') + TP.fmtDur(cat.steps_ns) + ')');
    const order = cat.names.map((n, i) => i).filter(i => cat.total_ns[i] > 0);
    TP.barChart(c, {
      labels: order.map(i => cat.names[i]),
      series: [{ label: 'time', values: order.map(i => cat.total_ns[i]) }], colors: order.map(i => TP.COLORS[i % TP.COLORS.length]),
      kind: 'ns', fmt: v => TP.fmtDur(v) + (v && cat.steps_ns ? ' (' + (100 * v / cat.steps_ns).toFixed(1) + '%)' : ''),
      attrs: { 'data-chart': 'categories_total' }
    });
  }

  function zoneBars(host, ds, names) {
    const cols = ds.x0.map((a, i) => a === ds.x1[i] ? String(a) : a + '\u2013' + ds.x1[i]);
    TP.stackedBars(host, {
      columns: cols, columnLabel: 'step ', yKind: 'ns', fmt: v => TP.fmtDur(v), xTitle: 'step', yTitle: 'time per step',
      series: names.map((n, v) => ({ label: n, values: ds.mean[v].map(x => (x || 0) * 1e6) })),
      attrs: { 'data-chart': 'parts', 'data-points': ds.points }
    });
    if (ds.width > 1) el('p', { class: 'note' }, host, 'Each bar is the mean of ' + ds.width + ' consecutive steps.');
  }

  function config(host, text) {
    const c = parseOr(text);
    if (!c) { el('p', { class: 'note' }, host, text ? 'config.json is unreadable.' : 'No configuration (a trace file was given).'); return; }
    const rows = Object.keys(c).map(k => {
      const v = c[k] && typeof c[k] === 'object' && 'value' in c[k] ? c[k] : { value: c[k], source: '' };
      return { key: k, value: typeof v.value === 'string' ? v.value : JSON.stringify(v.value), source: v.source || '' };
    });
    TP.table(host, [{ key: 'key', label: 'key', align: 'l' }, { key: 'value', label: 'value', align: 'l' }, { key: 'source', label: 'source', align: 'l' }],
      rows, { id: 'config-table', search: rows.length > 20 });
  }

  TP.view({
    key: 'overview', title: 'Overview', order: 10,
    render(root, d, D) {
      const run = TP.card(root, 'Run', 'overview-run');
      const statsBox = el('div', { class: 'stats', id: 'stats' }, run);
      if (d.step_note) el('p', { class: 'note', id: 'stepnote' }, run, d.step_note);
      if (d.run_error) el('p', { class: 'error' }, run, d.run_error);
      gpus(root, d.gpus || [], d.gpu);
      /* several ranks: their steps are not one series; the parts that show
       * steps show the rank chosen, each label naming it (issue 31) */
      const perRank = el('div', { id: 'ov-steps' }, root);
      const draw = r => {
        const v = r === null ? d : Object.assign({}, d, {
          rank: r.rank, step_ms: r.step_ms, findings: r.findings, findings_steps: r.findings_steps, findings_from: r.findings_from,
          categories: d.categories && r.steps ? { names: d.categories.names, total_ns: r.total_ns, steps_ns: r.steps_ns, n_steps: r.n_steps, steps: r.steps } : null
        });
        statsBox.textContent = '';
        perRank.textContent = '';
        stats(statsBox, D, v);
        findings(el('div', { id: 'findings-list' }, TP.card(perRank, 'Findings' + (r ? ' (rank ' + r.rank + ')' : ''), 'findings')),
          v.findings, v.findings_from, v.findings_steps, v.run_dir, v.rank);
        if (v.categories) categories(perRank, v.categories, v.rank);
        if (v.step_ms) dsChart(TP.card(perRank, 'Step time' + (r ? ' (rank ' + r.rank + ')' : ''), 's-step'), 'step_ms', v.step_ms, [{ v: 0, label: 'step time' }],
          { scale: 1e6, yKind: 'ns', fmt: v => TP.fmtDur(v), windows: d.windows, rank: v.rank, xTitle: r ? 'step (rank ' + r.rank + ')' : 'step' });
      };
      if (d.ranks && d.ranks.length > 1) TP.rankPicker(run, d.ranks.map(r => r.rank), i => draw(d.ranks[i]), 'ov-rank');
      else draw(null);
      const ms = v => TP.fmtDur(v * 1e6);
      if (d.throughput) dsChart(TP.card(root, 'Throughput', 's-tput'), 'throughput', d.throughput, [{ v: 0, label: 'samples/s' }],
        { fmt: TP.fmtNum, yTitle: 'samples/s', windows: d.windows });
      if (d.parts && d.part_names.length) zoneBars(TP.card(root, 'Step breakdown (zones)', 's-parts'), d.parts, d.part_names);
      if (d.ops.length) {
        const c = TP.card(root, 'Zones (operations.json)', 's-ops');
        TP.table(c, [
          { key: 'name', label: 'name', align: 'l' }, { key: 'where', label: 'where', align: 'l' }, { key: 'calls', label: 'calls' },
          { key: 'total_ms', label: 'total', fmt: ms }, { key: 'self_ms', label: 'self', fmt: ms }, { key: 'avg_ms', label: 'mean', fmt: ms },
          { key: 'min_ms', label: 'min', fmt: ms }, { key: 'max_ms', label: 'max', fmt: ms }
        ], d.ops, { id: 'ops-table', sortBy: 'self_ms', search: d.ops.length > 20 });
      }
      if (D.meta.kind === 'run directory') config(TP.card(root, 'Configuration', 'config'), d.config);
    }
  });
})();
