/* view_diff.js - the Diff view (D.diff, written by view_diff.c from what
 * `trainprof diff` computes): two runs side by side; the step breakdown
 * change; operators by impact (those in one run only included); the
 * findings that moved. */
(function () {
  'use strict';

  function pct(a, b) { return a ? (b - a) / a * 100 : (b ? Infinity : 0); }
  function fmtPct(v) {
    if (v === Infinity) return 'new';
    if (!isFinite(v)) return '\u2013';
    return (v > 0 ? '+' : '') + v.toFixed(1) + '%';
  }
  function fmtSigned(ns) { return (ns > 0 ? '+' : ns < 0 ? '\u2212' : '') + TP.fmtDur(Math.abs(ns)); }

  function headline(root, X) {
    var p = TP.el('p', {'class': 'diff-headline'}, root);
    var worse = X.change_pct > 0;
    p.textContent = X.metric + ': ' + TP.fmtDur(X.metric_a_ns) + ' \u2192 ' + TP.fmtDur(X.metric_b_ns) + ' (' +
      fmtPct(X.change_pct) + ', B is ' + (worse ? 'slower' : X.change_pct < 0 ? 'faster' : 'the same') + ')';
    TP.table(root, [
      {key: 'run', label: 'Run'},
      {key: 'path', label: 'Trace'},
      {key: 'steps', label: 'Steps', fmt: TP.fmtNum, align: 'right'},
      {key: 'mean', label: 'Mean step', fmt: TP.fmtDur, align: 'right'},
      {key: 'p50', label: 'Median', fmt: TP.fmtDur, align: 'right'},
      {key: 'p90', label: 'p90', fmt: TP.fmtDur, align: 'right'}
    ], ['a', 'b'].map(function (k) {
      var r = X[k];
      return {run: k === 'a' ? 'A (baseline)' : 'B', path: r.path, steps: r.steps, mean: r.mean_ns, p50: r.p50_ns, p90: r.p90_ns};
    }), {});
  }

  function breakdown(root, X) {
    TP.el('h3', null, root, 'Step breakdown (mean per step)');
    var parts = X.parts.filter(function (p) { return p.a_ns || p.b_ns; });
    if (!parts.length) { TP.el('p', null, root, 'No steps in A or B: no breakdown to compare.'); return; }
    TP.stackedBars(root, {
      labels: ['A', 'B'],
      series: parts.map(function (p) { return {name: p.name, values: [p.a_ns, p.b_ns]}; }),
      unit: 'ns'
    });
    TP.table(root, [
      {key: 'name', label: 'Part'},
      {key: 'a', label: 'A', fmt: TP.fmtDur, align: 'right'},
      {key: 'b', label: 'B', fmt: TP.fmtDur, align: 'right'},
      {key: 'change', label: 'Change', fmt: fmtSigned, align: 'right'},
      {key: 'pct', label: '%', fmt: fmtPct, align: 'right'}
    ], parts.map(function (p) {
      return {name: p.name, a: p.a_ns, b: p.b_ns, change: p.b_ns - p.a_ns, pct: pct(p.a_ns, p.b_ns)};
    }), {});
  }

  function steps(root, X) {
    var P = X.pairs;
    if (!P || !P.a.length) return;
    TP.el('h3', null, root, 'Steps, paired in order (A #' + P.num_a[0] + ' with B #' + P.num_b[0] + ', \u2026)');
    TP.lineChart(root, {
      x: P.a.map(function (_, i) { return i; }),
      series: [{name: 'A', values: P.a}, {name: 'B', values: P.b}],
      unit: 'ns', xLabel: 'step pair'
    });
  }

  function ops(root, X) {
    TP.el('h3', null, root, 'Operators by impact (|total B \u2212 total A|)');
    if (X.ops_total > X.ops.length)
      TP.el('p', {'class': 'hint'}, root, 'The ' + X.ops.length + ' most changed of ' + X.ops_total + ' operators.');
    TP.table(root, [
      {key: 'name', label: 'Operator'},
      {key: 'kind', label: 'Where'},
      {key: 'status', label: 'In'},
      {key: 'calls_a', label: 'Calls A', fmt: TP.fmtNum, align: 'right'},
      {key: 'calls_b', label: 'Calls B', fmt: TP.fmtNum, align: 'right'},
      {key: 'total_a', label: 'Total A', fmt: TP.fmtDur, align: 'right'},
      {key: 'total_b', label: 'Total B', fmt: TP.fmtDur, align: 'right'},
      {key: 'change', label: 'Change', fmt: fmtSigned, align: 'right'},
      {key: 'impact', label: '|Change|', fmt: TP.fmtDur, align: 'right'},
      {key: 'pct', label: '%', fmt: fmtPct, align: 'right'}
    ], X.ops.map(function (o) {
      return {name: o.name, kind: o.kind, status: o.status === 'both' ? 'A and B' : o.status === 'new' ? 'B only (new)' : 'A only (gone)',
        calls_a: o.calls_a, calls_b: o.calls_b, total_a: o.total_a_ns, total_b: o.total_b_ns, change: o.change_ns,
        impact: Math.abs(o.change_ns), pct: pct(o.total_a_ns, o.total_b_ns)};
    }), {sortBy: 'impact', search: true, limit: 200});
  }

  function findings(root, X) {
    TP.el('h3', null, root, 'Findings that moved (share of step time)');
    if (!X.findings.length) { TP.el('p', null, root, 'No finding above its threshold in A or B.'); return; }
    TP.table(root, [
      {key: 'id', label: 'Finding'},
      {key: 'title', label: ''},
      {key: 'a', label: 'A'},
      {key: 'b', label: 'B'},
      {key: 'pts', label: 'Change', align: 'right'},
      {key: 'verdict', label: 'Verdict'}
    ], X.findings.map(function (f) {
      var d = 100 * (f.share_b - f.share_a);
      return {id: f.id, title: f.title, a: f.in_a ? (100 * f.share_a).toFixed(1) + '%' : '\u2013',
        b: f.in_b ? (100 * f.share_b).toFixed(1) + '%' : '\u2013', pts: (d > 0 ? '+' : '') + d.toFixed(1) + ' pts', verdict: f.verdict};
    }), {});
  }

  TP.view({
    key: 'diff', title: 'Diff', order: 5,
    render: function (root, X) {
      headline(root, X);
      breakdown(root, X);
      steps(root, X);
      ops(root, X);
      findings(root, X);
    }
  });
})();
