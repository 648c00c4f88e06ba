'use strict';
/* view_operators.js - the Operators view: every host span name with torch
 * key_averages()' numbers (calls, host self/total, device self/total), by
 * operator or by operator + input shapes, a top-N chart, and the python call
 * stacks each operator ran under. Data: D.operators (view_operators.c). */
(function () {
  const el = TP.el;
  const KINDS = [['op', 'operators'], ['annotation', 'annotations'], ['step', 'steps'], ['runtime', 'runtime calls'], ['python', 'python frames']];

  function dur(v) { return TP.fmtDur(v); }
  function tcPct(v) { return v === null ? '-' : TP.fmtPct(v); }

  function columns(d, shapes) {
    const c = [{ key: 'name', label: 'Name', align: 'l' }];
    if (shapes) c.push({ key: 'shapes', label: 'Input shapes', align: 'l' });
    c.push({ key: 'kind', label: 'Kind', align: 'l' },
      { key: 'calls', label: 'Calls', title: 'calls, as torch counts them (an only child of the same name is not counted)' },
      { key: 'self', label: 'Host self', fmt: dur, title: 'duration minus the durations of the spans directly inside it' },
      { key: 'total', label: 'Host total', fmt: dur },
      { key: 'mean', label: 'Mean total', fmt: dur },
      { key: 'share', label: 'Self %', fmt: v => TP.fmtPct(v), title: 'of all self time, as torch\u2019s table (every kind, shown or not)' });
    if (d.has_device)
      c.push({ key: 'dself', label: 'Device self', fmt: dur, title: 'kernels, memcpy and memset launched directly by it' },
        { key: 'dtotal', label: 'Device total', fmt: dur, title: '... by it and by every span inside it' },
        /* the TensorBoard plugin's three columns (its tooltips' words) */
        { key: 'tce', label: 'TC eligible', align: 'l', title: 'Tensor Cores eligible: the operator is in the TensorBoard plugin\u2019s list (matmul, conv, linear, their backward ...), has an eligible child operator, or launched tensor-core kernels itself' },
        { key: 'tcs', label: 'TC self %', fmt: tcPct, title: 'Tensor Cores self: time of its own kernels that use tensor cores / time of its own device work' },
        { key: 'tct', label: 'TC total %', fmt: tcPct, title: 'Tensor Cores total: the same with the kernels of the operators inside it' });
    return c;
  }

  /* Self %: of all self time, as torch's table divides it (the sum of every
   * row's self, python frames and the rows left out of the page included,
   * whichever kinds are shown). Overlapping python frames have negative
   * self times; where they would push a share past 100 %, the divisor is
   * the sum of the positive self times instead. */
  function prepare(t) {
    const rows = t.rows;
    let signed = 0, positive = 0, most = 0;
    for (const r of rows.concat(t.other ? [t.other] : [])) {
      signed += r.self;
      positive += Math.max(0, r.self);
      most = Math.max(most, r.self);
    }
    const self = signed > 0 && most <= signed ? signed : positive;
    /* tensor cores as the plugin shows them: shares of device self/total, 0 without device time */
    const tc = r => r.dtotal ? { tce: r.tc_eligible ? 'yes' : 'no', tcs: r.dself ? 100 * r.tc_self / r.dself : 0, tct: 100 * r.tc_total / r.dtotal }
      : { tce: '-', tcs: null, tct: null };
    return rows.map(r => Object.assign({}, r, tc(r), { mean: r.calls ? r.total / r.calls : 0, share: self ? 100 * r.self / self : 0 }));
  }

  function stacksCard(root, rows) {
    const withStacks = rows.filter(r => r.stacks && r.stacks.length);
    if (!withStacks.length) return null;
    const c = TP.card(root, 'Call stacks', 'ops-stacks');
    el('p', { class: 'note' }, c, 'The python frames around each operator (with_stack=True), innermost first, up to 5 different stacks per operator. Click an operator in the table to open its stacks.');
    const box = el('div', {}, c);
    for (const r of withStacks.slice(0, 100)) {
      const det = el('details', { 'data-op': r.name }, box);
      el('summary', {}, det, r.name + ' \u2014 ' + r.stacks.length + (r.stacks.length === 1 ? ' stack' : ' stacks'));
      for (const s of r.stacks) {
        const div = el('div', { class: 'stack' }, det);
        el('div', { class: 'note' }, div, TP.fmtNum(s.calls) + ' calls, ' + dur(s.total));
        const ol = el('ol', {}, div);
        for (const f of s.frames) el('li', {}, ol, f);
      }
      if (r.other_stack_calls) el('div', { class: 'note' }, det, TP.fmtNum(r.other_stack_calls) + ' more calls under other stacks');
    }
    return box;
  }

  function leftOut(parent, t, what) {
    if (!t.left_out) return;
    const o = t.other || {};
    el('p', { class: 'note', 'data-left-out': t.left_out }, parent, t.left_out + ' more ' + what + ' are left out of this page (the ' + t.rows.length +
      ' with the largest host total are listed): together ' + TP.fmtNum(o.calls || 0) + ' calls, host total ' + dur(o.total || 0) + ', host self ' + dur(o.self || 0) + '.');
  }

  function render(root, d, D) {
    const top = TP.card(root, 'Operators', 'ops-summary');
    const names = d.by_name.rows.length + (d.by_name.left_out || 0);
    /* a run directory's page has the whole run too (zones, findings): these
     * shares are of the traced steps only, and a reader must not mix them up */
    if (D && D.meta && D.meta.kind === 'run directory')
      el('p', { class: 'note', id: 'ops-scope' }, top, 'Of the run’s traces (profiler_traces/): the traced steps only. The whole run’s zones (operations.json) are on the Overview.');
    el('p', { class: 'note' }, top, TP.fmtNum(names) + ' names from ' + TP.fmtNum(d.spans) + ' host spans. Counts and times follow torch\u2019s key_averages(): self time is a span\u2019s duration minus the spans directly inside it on its thread, and a span whose parent has the same name and no other child is not counted (' +
      TP.fmtNum(d.folded) + ' such spans).' + (d.device_events ? ' Device time: ' + TP.fmtNum(d.device_events) + ' kernels, copies and sets, ' + TP.fmtNum(d.device_by_correlation) +
      ' attributed through their runtime call\u2019s correlation id' + (d.device_by_external_id ? ', ' + TP.fmtNum(d.device_by_external_id) + ' by External id' : '') +
      (d.device_unattributed ? ', ' + TP.fmtNum(d.device_unattributed) + ' to no operator' : '') + '.' : ''));
    if (d.chunked_files) el('p', { class: 'note' }, top, d.chunked_files + ' file(s) had more spans than fit at once and were nested in parts: self times of spans cut by a part boundary are approximate.');

    const ctl = el('div', { class: 'controls', style: 'display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center;margin:6px 0' }, top);
    let group = 'name', metric = d.has_device ? 'dself' : 'self';
    const kinds = new Set(KINDS.map(k => k[0]).filter(k => k !== 'python'));
    const present = new Set(d.by_name.rows.map(r => r.kind));
    if (d.has_shapes) {
      const lab = el('label', {}, ctl, 'Group by ');
      const sel = el('select', { id: 'ops-group' }, lab);
      el('option', { value: 'name' }, sel, 'operator');
      el('option', { value: 'shape' }, sel, 'operator + input shapes');
      sel.addEventListener('change', () => { group = sel.value; draw(); });
    }
    for (const [k, label] of KINDS) {
      if (!present.has(k)) continue;
      const lab = el('label', { class: 'chk' }, ctl);
      const cb = el('input', { type: 'checkbox', 'data-kind': k }, lab);
      cb.checked = kinds.has(k);
      lab.appendChild(document.createTextNode(' ' + label));
      cb.addEventListener('change', () => { if (cb.checked) kinds.add(k); else kinds.delete(k); draw(); });
    }
    const mlab = el('label', {}, ctl, ' Chart ');
    const msel = el('select', { id: 'ops-metric' }, mlab);
    for (const [k, label] of [['self', 'host self'], ['total', 'host total'], ['dself', 'device self'], ['dtotal', 'device total'], ['calls', 'calls']]) {
      if ((k === 'dself' || k === 'dtotal') && !d.has_device) continue;
      const o = el('option', { value: k }, msel, label);
      if (k === metric) o.selected = true;
    }
    msel.addEventListener('change', () => { metric = msel.value; draw(); });

    const chartBox = el('div', { id: 'ops-chart' }, TP.card(root, 'Top operators'));
    const tableCard = TP.card(root, 'All operators', 'ops-all');
    const tableBox = el('div', {}, tableCard);
    const noteBox = el('div', {}, tableCard);
    const byName = prepare(d.by_name), byShape = d.by_shape ? prepare(d.by_shape) : [];
    const stacks = stacksCard(root, d.by_name.rows);

    /* a clicked operator row opens that operator's stacks */
    function openStacks(r) {
      for (const det of stacks.querySelectorAll('details')) if (det.dataset.op === r.name) { det.open = true; det.scrollIntoView({ block: 'nearest' }); }
    }

    function draw() {
      const t = group === 'shape' ? d.by_shape : d.by_name;
      const rows = (group === 'shape' ? byShape : byName).filter(r => kinds.has(r.kind));
      chartBox.textContent = '';
      const topRows = rows.slice().sort((a, b) => b[metric] - a[metric]).filter(r => r[metric] > 0).slice(0, 15);
      const label = r => group === 'shape' && r.shapes ? r.name + ' ' + r.shapes : r.name;
      const fmt = metric === 'calls' ? v => TP.fmtNum(v) : dur;
      if (topRows.length)
        TP.barChart(chartBox, { labels: topRows.map(label), series: [{ label: metric, values: topRows.map(r => r[metric]) }], fmt: fmt, kind: metric === 'calls' ? undefined : 'ns', attrs: { 'data-chart': 'ops-top', 'data-metric': metric } });
      else el('p', { class: 'note' }, chartBox, 'Nothing to chart for this choice.');
      tableBox.textContent = '';
      TP.table(tableBox, columns(d, group === 'shape'), rows, { sortBy: d.has_device && metric.startsWith('d') ? metric : 'self', search: true, limit: 200, id: 'operators-table', onRow: stacks ? openStacks : undefined });
      noteBox.textContent = '';
      leftOut(noteBox, t, group === 'shape' ? 'operator + shape rows' : 'names');
    }
    draw();
  }

  TP.view({
    key: 'operators', title: 'Operators', order: 20,
    missing: 'no host spans (cpu_op, user_annotation, python_function) in the traces',
    render: render
  });
})();
