/* view_diff.js - the Diff view (D.diff, written by view_diff.c from what
 * `trainprof diff` computes): two runs side by side; the step breakdown
 * change; operators by impact (those in one run only included); the
 * findings that moved. */
(function () {
  'use strict';
  /* table cells get (value, row): the row must not reach the unit argument */
  function dur(v) { return TP.fmtDur(v); }
  function bytes(v) { return TP.fmtBytes(v); }
  function num(v) { return TP.fmtNum(v); }

  function pct(a, b) { return a ? (b - a) / a * 100 : (b ? Infinity : 0); }
  function fmtPct(v) {
    if (v === Infinity) return 'new';
    if (!isFinite(v)) return '\u2013';
    return (v > 0 ? '+' : v < 0 ? '\u2212' : '') + Math.abs(v).toFixed(1) + '%';
  }
  function fmtSigned(ns) { return (ns > 0 ? '+' : ns < 0 ? '\u2212' : '') + TP.fmtDur(Math.abs(ns)); }

  function headline(card, X) {
    var root = TP.card(card, 'A (baseline) and B', 'diff-runs');
    var p = TP.el('p', {'class': 'diff-headline'}, root);
    var worse = X.change_pct > 0;
    p.textContent = X.metric + ': ' + TP.fmtDur(X.metric_a_ns) + ' \u2192 ' + TP.fmtDur(X.metric_b_ns) + ' (' +
      fmtPct(X.change_pct) + ', B is ' + (worse ? 'slower' : X.change_pct < 0 ? 'faster' : 'the same') + ')';
    TP.table(root, [
      {key: 'run', label: 'Run', align: 'l'},
      {key: 'path', label: 'Trace', align: 'l'},
      {key: 'steps', label: 'Steps', fmt: num, align: 'r'},
      {key: 'mean', label: 'Mean step', fmt: dur, align: 'r'},
      {key: 'p50', label: 'Median', fmt: dur, align: 'r'},
      {key: 'p90', label: 'p90', fmt: dur, align: 'r'}
    ], ['a', 'b'].map(function (k) {
      var r = X[k];
      return {run: k === 'a' ? 'A (baseline)' : 'B', path: r.path, steps: r.steps, mean: r.mean_ns, p50: r.p50_ns, p90: r.p90_ns};
    }), {});
  }

  function breakdown(card, X) {
    var root = TP.card(card, 'Step breakdown (mean per step)', 'diff-breakdown');
    var parts = X.parts.filter(function (p) { return p.a_ns || p.b_ns; });
    if (!parts.length) { TP.el('p', null, root, 'No steps in A or B: no breakdown to compare.'); return; }
    TP.barChart(root, {
      labels: ['A', 'B'],
      series: parts.map(function (p) { return {label: p.name, values: [p.a_ns, p.b_ns]}; }),
      fmt: dur, kind: 'ns', attrs: {'data-chart': 'diff-breakdown'}
    });
    TP.table(root, [
      {key: 'name', label: 'Part', align: 'l'},
      {key: 'a', label: 'A', fmt: dur, align: 'r'},
      {key: 'b', label: 'B', fmt: dur, align: 'r'},
      {key: 'change', label: 'Change', fmt: fmtSigned, align: 'r'},
      {key: 'pct', label: '%', fmt: fmtPct, align: 'r'}
    ], parts.map(function (p) {
      return {name: p.name, a: p.a_ns, b: p.b_ns, change: p.b_ns - p.a_ns, pct: pct(p.a_ns, p.b_ns)};
    }), {});
  }

  function steps(card, X) {
    var P = X.pairs;
    if (!P || !P.a.length) return;
    var root = TP.card(card, 'Steps, paired in order (A #' + P.num_a[0] + ' with B #' + P.num_b[0] + ', \u2026)', 'diff-steps');
    var x = P.a.map(function (_, i) { return i + 1; });
    TP.lineChart(root, {
      series: [{label: 'A', x: x, y: P.a}, {label: 'B', x: x, y: P.b}],
      yKind: 'ns', yMin: 0, yTitle: 'step time', xTitle: 'step pair', xInt: true,
      readout: function (s, i) { return s.label + ' step #' + (s.label === 'A' ? P.num_a[i] : P.num_b[i]) + ': ' + TP.fmtDur(s.y[i]); },
      attrs: {'data-chart': 'diff-steps', 'data-points': P.a.length}
    });
  }

  function ops(card, X) {
    var root = TP.card(card, 'Operators by impact (|total B \u2212 total A|)', 'diff-ops');
    if (X.ops_total > X.ops.length)
      TP.el('p', {'class': 'note'}, root, 'The ' + X.ops.length + ' most changed of ' + X.ops_total + ' operators.');
    /* kernels as the Kernels view labels them (330 px: 39 characters), so two
     * look-alike kernels never read the same; host operators as written */
    var kname = TP.nameLabeler(X.ops.filter(function (o) { return o.kind === 'gpu'; }).map(function (o) { return o.name; }), 39);
    TP.table(root, [
      {key: 'name', label: 'Operator', align: 'l', maxWidth: 330, fmt: function (v, r) { return r.kind === 'gpu' ? kname(v) : v; }},
      {key: 'kind', label: 'Where', align: 'l'},
      {key: 'status', label: 'In', align: 'l'},
      {key: 'calls_a', label: 'Calls A', fmt: num, align: 'r'},
      {key: 'calls_b', label: 'Calls B', fmt: num, align: 'r'},
      {key: 'total_a', label: 'Total A', fmt: dur, align: 'r'},
      {key: 'total_b', label: 'Total B', fmt: dur, align: 'r'},
      {key: 'change', label: 'Change', fmt: fmtSigned, align: 'r'},
      {key: 'impact', label: '|Change|', fmt: dur, align: 'r'},
      {key: 'pct', label: '%', fmt: fmtPct, align: 'r'}
    ], X.ops.map(function (o) {
      return {name: o.name, kind: o.kind, status: o.status === 'both' ? 'A and B' : o.status === 'new' ? 'B only (new)' : 'A only (gone)',
        calls_a: o.calls_a, calls_b: o.calls_b, total_a: o.total_a_ns, total_b: o.total_b_ns, change: o.change_ns,
        impact: Math.abs(o.change_ns), pct: pct(o.total_a_ns, o.total_b_ns)};
    }), {sortBy: 'impact', search: true, limit: 50, id: 'diff-ops-table'});
  }

  function findings(card, X) {
    var root = TP.card(card, 'Findings that moved (share of step time)', 'diff-findings');
    if (!X.findings.length) { TP.el('p', null, root, 'No finding above its threshold in A or B.'); return; }
    TP.table(root, [
      {key: 'id', label: 'Finding', align: 'l'},
      {key: 'title', label: '', align: 'l'},
      {key: 'a', label: 'A', align: 'l'},
      {key: 'b', label: 'B', align: 'l'},
      {key: 'pts', label: 'Change', align: 'r'},
      {key: 'verdict', label: 'Verdict', align: 'l'}
    ], X.findings.map(function (f) {
      var d = 100 * (f.share_b - f.share_a);
      return {id: f.id, title: f.title, a: f.in_a ? (100 * f.share_a).toFixed(1) + '%' : '\u2013',
        b: f.in_b ? (100 * f.share_b).toFixed(1) + '%' : '\u2013', pts: (d > 0 ? '+' : d < 0 ? '\u2212' : '') + Math.abs(d).toFixed(1) + ' pts', verdict: f.verdict};
    }), {});
  }

  TP.view({
    key: 'diff', title: 'Diff', order: 90,
    render: function (root, X) {
      headline(root, X);
      breakdown(root, X);
      steps(root, X);
      ops(root, X);
      findings(root, X);
    }
  });
})();
