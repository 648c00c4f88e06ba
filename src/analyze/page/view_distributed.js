/* view_distributed.js - the Distributed view (D.distributed, written by
 * view_distributed.c): per rank the step split into computation, overlap,
 * communication and other; the collectives; the straggler with its
 * evidence; clock alignment. The "job" part is `trainprof ranks --json`
 * of the same ranks, so every number here equals the CLI's. */
(function () {
  'use strict';
  /* table cells get (value, row): the row must not reach the unit argument */
  function dur(v) { return TP.fmtDur(v); }
  function bytes(v) { return TP.fmtBytes(v); }
  function num(v) { return TP.fmtNum(v); }
  var PARTS = ['computation', 'overlap', 'communication', 'other'];

  function mean(a) {
    var s = 0;
    for (var i = 0; i < a.length; i++) s += a[i];
    return a.length ? s / a.length : 0;
  }

  /* Steps over 3x the rank's median (a warm-up step) are left out of its
   * means so they do not flatten the others; the page says which. */
  function typical(st) {
    var d = (st.dur || []).slice().sort(function (a, b) { return a - b; }), med = d.length ? d[(d.length - 1) >> 1] : 0;
    var ok = (st.dur || []).map(function (v) { return d.length < 3 || v <= 3 * med; });
    var left = (st.num || []).filter(function (_, i) { return !ok[i]; });
    return {ok: ok, left: left};
  }

  function summary(root, X) {
    var J = X.job || {}, st = J.straggler || {}, ck = J.clock || {};
    var p = TP.el('p', {'class': 'dist-summary'}, TP.card(root, 'Job', 'dist-job'));
    p.textContent = X.ranks.length + ' ranks' + (J.world_size > 0 ? ' of a world of ' + J.world_size : '') +
      ', ' + J.steps + ' steps' + (J.format ? ' (' + J.format + ' traces)' : '') + '.';
    var s = TP.card(root, 'Straggler', 'dist-straggler');
    if (st.persistent) {
      TP.el('p', {'class': 'dist-straggler-rank'}, s, 'Rank ' + st.rank + ' is the slowest in ' +
        Math.round(100 * st.share) + '% of the contested steps (' + st.steps + ' of ' + st.contested_steps +
        '), by ' + TP.fmtDur(st.lead_p50_ns) + ' (median lead in compute); the other ranks wait ' +
        TP.fmtDur(st.others_wait_ns) + ' per step.');
    } else {
      TP.el('p', null, s, 'No persistent straggler' + (st.rank >= 0 ? ' (rank ' + st.rank + ' is the slowest in ' +
        Math.round(100 * (st.share || 0)) + '% of the steps)' : '') + '.');
    }
    (J.findings || []).forEach(function (f) { TP.el('p', {'class': 'dist-finding'}, s, f); });
    var c = TP.card(root, 'Clock alignment', 'dist-clock');
    TP.el('p', null, c, (ck.unsynced_ranks ? ck.unsynced_ranks + ' rank(s) without a measured clock offset; ' :
      'every rank\'s clock offset measured; ') + 'largest clock error ' + TP.fmtDur(ck.max_error_ns || 0) +
      '; median spread of a step\'s start across ranks ' + TP.fmtDur(ck.start_spread_p50_ns || 0) + '.');
    TP.table(c, [
      {key: 'rank', label: 'Rank', align: 'r'},
      {key: 'wall', label: 'Wall clock', align: 'l'},
      {key: 'synced', label: 'Offset measured', align: 'l'},
      {key: 'err', label: 'Clock error', fmt: dur, align: 'r'},
      {key: 'first', label: 'First step starts', fmt: function (v) { return v === null ? '\u2013' : '+' + TP.fmtDur(v); }, align: 'r'}
    ], X.ranks.map(function (r) {
      return {rank: r.rank, wall: r.wall_clock ? 'yes' : 'no (relative times)', synced: r.synced ? 'yes' : 'no',
        err: r.clock_error_ns, first: r.first_start_ns === undefined ? null : r.first_start_ns};
    }), {sortBy: 'rank', desc: false});
  }

  function perRank(card, X) {
    var root = TP.card(card, 'Ranks', 'dist-ranks');
    var rows = (X.job.per_rank || []).map(function (w) {
      var r = X.ranks.filter(function (k) { return k.rank === w.rank; })[0] || {steps: {}};
      var o = {rank: w.rank, host: w.host, steps: w.steps, mean: w.mean_ns, p50: w.p50_ns, p90: w.p90_ns,
        max: w.max_ns, compute: w.compute_mean_ns, comm: w.comm_mean_ns, wait: w.wait_mean_ns,
        bytes: w.bytes_per_step, slow: w.straggler_steps};
      var keep = typical(r.steps);
      PARTS.forEach(function (p) { o[p] = mean((r.steps[p] || []).filter(function (_, i) { return keep.ok[i]; })); });
      o.left = keep.left;
      return o;
    });
    TP.table(root, [
      {key: 'rank', label: 'Rank', align: 'r'},
      {key: 'host', label: 'Host', align: 'l'},
      {key: 'steps', label: 'Steps', fmt: num, align: 'r'},
      {key: 'mean', label: 'Mean step', fmt: dur, align: 'r'},
      {key: 'p50', label: 'p50', fmt: dur, align: 'r'},
      {key: 'p90', label: 'p90', fmt: dur, align: 'r'},
      {key: 'max', label: 'Max', fmt: dur, align: 'r'},
      {key: 'compute', label: 'Outside collectives', fmt: dur, align: 'r'},
      {key: 'comm', label: 'In collectives', fmt: dur, align: 'r'},
      {key: 'wait', label: 'Wait', fmt: dur, align: 'r'},
      /* collectives without a size in the trace: unknown, not 0 B */
      {key: 'bytes', label: 'Bytes / step', fmt: function (v, r) { return v || !r.comm ? bytes(v) : 'unknown'; }, align: 'r',
        title: 'bytes the rank\'s collectives moved per step; unknown when the trace gives no message size'},
      {key: 'slow', label: 'Slowest in', fmt: num, align: 'r'}
    ], rows, {sortBy: 'rank', desc: false});
    root = TP.card(card, 'Per rank: where a step goes (mean per step)', 'dist-split');
    TP.el('p', {'class': 'note'}, root, 'Computation: GPU work (the training thread\'s spans on a CPU-only rank) ' +
      'outside collectives; overlap: collectives running during computation; communication: collectives alone; ' +
      'other: neither (input, launch gaps, idle).');
    var out = rows.filter(function (r) { return r.left.length; }).map(function (r) {
      return 'rank ' + r.rank + ': step' + (r.left.length > 1 ? 's #' : ' #') + r.left.join(', #');
    });
    if (out.length) TP.el('p', {'class': 'note'}, root, 'Left out of these means as over 3\u00d7 their rank\'s median ' +
      '(warm-up): ' + out.join('; ') + '. The table above and the chart below keep them.');
    TP.barChart(root, {
      labels: rows.map(function (r) { return 'rank ' + r.rank; }),
      series: PARTS.map(function (p) { return {label: p, values: rows.map(function (r) { return r[p]; })}; }),
      fmt: dur, kind: 'ns', attrs: {'data-chart': 'rank-split'}
    });
  }

  function perStep(card, X) {
    var root = TP.card(card, 'Per step, one rank at a time', 'dist-steps');
    var box;
    /* every step label names its rank (issue 31): the ranks' step numbers are the same */
    function show(i) {
      box.textContent = '';
      var r = X.ranks[i], s = r.steps;
      if (r.stride > 1) TP.el('p', {'class': 'note'}, box, 'Every ' + r.stride + 'th of ' + r.steps_total + ' steps of rank ' + r.rank + ' shown.');
      TP.stackedBars(box, {
        columns: s.num,
        series: PARTS.map(function (p) { return {label: p, values: s[p]}; }),
        fmt: dur, yKind: 'ns', yTitle: 'time per step', xTitle: 'step (rank ' + r.rank + ')', columnLabel: 'rank ' + r.rank + ' \u00b7 step ',
        attrs: {'data-chart': 'rank-steps', 'data-rank': r.rank}
      });
    }
    var sel = TP.rankPicker(root, X.ranks.map(function (r) { return r.rank; }), function (i) { if (box) show(i); }, 'dist-rank');
    sel.classList.add('dist-rank');
    box = TP.el('div', null, root);
    show(0);
  }

  function collectives(card, X) {
    var root = TP.card(card, 'Collectives', 'dist-collectives');
    var rows = [];
    X.ranks.forEach(function (r) {
      r.collectives.forEach(function (c) {
        rows.push({rank: r.rank, name: c.name, calls: c.calls, total: c.total_ns,
          mean: c.calls ? c.total_ns / c.calls : 0, bytes: c.bytes, where: r.device_comm ? 'GPU kernels' : 'host spans'});
      });
    });
    if (!rows.length) { TP.el('p', null, root, 'No collective in these traces.'); return; }
    TP.table(root, [
      {key: 'rank', label: 'Rank', align: 'r'},
      {key: 'name', label: 'Collective', align: 'l'},
      {key: 'where', label: 'Timed from', align: 'l'},
      {key: 'calls', label: 'Calls', fmt: num, align: 'r'},
      {key: 'total', label: 'Total', fmt: dur, align: 'r'},
      {key: 'mean', label: 'Mean', fmt: dur, align: 'r'},
      {key: 'bytes', label: 'Bytes', fmt: bytes, align: 'r'}
    ], rows, {sortBy: 'total', search: true});
  }

  TP.view({
    key: 'distributed', title: 'Distributed', order: 70,
    render: function (root, X) {
      summary(root, X);
      perRank(root, X);
      perStep(root, X);
      collectives(root, X);
      var warn = (X.job && X.job.warnings) || [];
      if (warn.length || X.ranks_left_out) {
        var ul = TP.el('ul', null, TP.card(root, 'Warnings', 'dist-warnings'));
        warn.forEach(function (w) { TP.el('li', null, ul, w); });
        if (X.ranks_left_out) TP.el('li', null, ul, X.ranks_left_out + ' more ranks left out of the page.');
      }
    }
  });
})();
