'use strict';
/* view_memory.js - the Memory view: trainprof's own samples of a run
 * directory (RSS, system memory, each GPU's allocated / reserved / peak). */
(function () {
  const el = TP.el;

  function dsSeries(ds, v, label, scale) {
    const s = { label: label, x: [], y: [], lo: [], hi: [] };
    for (let c = 0; c < ds.x0.length; c++) {
      const m = ds.mean[v][c];
      if (m === null) continue;
      s.x.push((ds.x0[c] + ds.x1[c]) / 2);
      s.y.push(m * scale); s.lo.push(ds.min[v][c] * scale); s.hi.push(ds.max[v][c] * scale);
    }
    return s;
  }

  /* one chart of the samples; data-ymin/ymax in the file's units (MB, %, GB) */
  function samplesChart(host, name, ds, series, scale, kind, title) {
    let lo = Infinity, hi = -Infinity;
    for (const s of series) for (let c = 0; c < ds.x0.length; c++) {
      if (ds.min[s.v][c] !== null) lo = Math.min(lo, ds.min[s.v][c]);
      if (ds.max[s.v][c] !== null) hi = Math.max(hi, ds.max[s.v][c]);
    }
    if (!isFinite(lo)) return null;
    const fmt = kind === 'bytes' ? v => TP.fmtBytes(v) : v => TP.fmtPct(v);
    return TP.lineChart(host, {
      series: series.map(s => dsSeries(ds, s.v, s.label, scale)), yKind: kind, yTitle: title, xTitle: 'step', xInt: true,
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

  TP.view({
    key: 'memory', title: 'Memory', order: 50,
    missing: 'no [memory] events (profile with profile_memory=True) and no memory_profile.json',
    render(root, d) {
      if (d.samples) samples(root, d.samples, d.devices || []);
    }
  });
})();
