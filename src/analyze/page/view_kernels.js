'use strict';
/* view_kernels.js - the Kernels view: device kernels by name, and by name +
 * launching operator + grid + block + registers + shared memory; blocks per
 * SM and est. achieved occupancy weighted by duration; tensor-core use.
 * Data: D.kernels (view_kernels.c). */
(function () {
  const el = TP.el;
  const dur = v => TP.fmtDur(v);
  const dim = v => v ? v.join('\u00d7') : '-';
  const occ = v => v === null || v === undefined ? '-' : TP.fmtPct(v);
  const num2 = v => v === null || v === undefined ? '-' : TP.fmtNum(v, 2);

  const STATS = [
    { key: 'calls', label: 'Calls' },
    { key: 'total', label: 'Total', fmt: dur },
    { key: 'mean', label: 'Mean', fmt: dur },
    { key: 'min', label: 'Min', fmt: dur },
    { key: 'max', label: 'Max', fmt: dur },
    { key: 'share', label: '% of kernel time', fmt: v => TP.fmtPct(v) }
  ];

  function withShare(rows, total) {
    const yes = v => v ? 'yes' : 'no';
    return rows.map(r => Object.assign({}, r, { share: total ? 100 * r.total / total : 0, tc: yes(r.tensor_cores), op_tc: yes(r.op_tc_eligible) }));
  }

  function leftOut(parent, t) {
    if (t.left_out)
      el('p', { class: 'note', 'data-left-out': t.left_out }, parent, t.left_out + ' more rows are left out of this page (' + TP.fmtNum(t.left_out_calls) + ' calls, ' + dur(t.left_out_total) + '); the ' + t.rows.length + ' with the largest total are listed.');
  }

  function render(root, d) {
    const top = TP.card(root, 'Kernels', 'kernels-summary');
    const stats = el('div', { class: 'stats' }, top);
    const stat = (label, v, id) => { const s = el('div', { class: 'stat', id: id }, stats); el('b', {}, s, v); s.appendChild(document.createTextNode(label)); };
    stat('kernel time', dur(d.total), 'k-total');
    stat('kernel names', TP.fmtNum(d.by_name.rows.length + (d.by_name.left_out || 0)), 'k-names');
    stat('on tensor cores (by name)', d.total ? TP.fmtPct(100 * d.tensor_core_total / d.total) : '-', 'k-tc');
    if (d.memcpy_calls) stat('memcpy (' + TP.fmtNum(d.memcpy_calls) + ')', dur(d.memcpy_total), 'k-memcpy');
    if (d.memset_calls) stat('memset (' + TP.fmtNum(d.memset_calls) + ')', dur(d.memset_total), 'k-memset');
    el('p', { class: 'note' }, top, 'Blocks per SM and est. achieved occupancy are what the trace records per kernel (CUPTI), averaged weighted by duration. Tensor-core use is read from kernel names, as the TensorBoard plugin reads it (h884, s1688, 16816, hmma, xmma, cuDNN\u2019s conv1x1 and direct_group ...; and newer kernels\u2019 gmma, wmma, imma, tensorop): the trace has no flag for it. Collectives (NCCL/RCCL kernels) are listed with kind communication.');

    const byName = withShare(d.by_name.rows, d.total), byCfg = withShare(d.by_config.rows, d.total);
    const topRows = byName.slice(0, 15);
    if (topRows.length)
      TP.barChart(TP.card(root, 'Top kernels by total time', 'kernels-chart'), { labels: topRows.map(r => r.name), series: [{ label: 'total', values: topRows.map(r => r.total) }], fmt: dur, kind: 'ns', attrs: { 'data-chart': 'kernels-top' } });

    /* a name column's characters at this window's width, by the same rule as
     * its CSS max-width below (8.4 px a glyph): a label fitted to 560 px and
     * cut by a 360 px column would read like its look-alikes again (9 px in
     * the launch-configuration table: at 1,200 px its 144 px column cut
     * 17-glyph labels dense in digits, "…s1688gemm_64x12…") */
    const vw = document.documentElement.clientWidth || 1400;
    const chars = (px, glyph) => Math.max(12, Math.floor(px / (glyph || 8.4)));
    const c1 = TP.card(root, 'By kernel name', 'kernels-name');
    /* the wide view's room goes to the names, each label fitting its column
     * (TP.nameLabeler): look-alike kernels cut at 330 px read the same */
    TP.table(c1, [{ key: 'name', label: 'Kernel', align: 'l', fmt: TP.nameLabeler(byName.map(r => r.name), chars(Math.min(560, vw - 840))), title: 'without return type, namespaces and arguments; the full name on hover', maxWidth: 'min(560px, calc(100vw - 840px))' }, { key: 'kind', label: 'Kind', align: 'l' }].concat(STATS,
      [{ key: 'occupancy', label: 'Est. occupancy', fmt: occ, title: 'est. achieved occupancy %, weighted by duration' },
        { key: 'blocks_per_sm', label: 'Blocks/SM', fmt: num2 }, { key: 'tc', label: 'Tensor cores used', align: 'l', title: 'the kernel\u2019s name is one of tensor-core kernels (the TensorBoard plugin\u2019s list, and newer kernels)' }]),
    byName, { sortBy: 'total', search: true, limit: 100, id: 'kernels-by-name' });
    leftOut(c1, d.by_name);

    const c2 = TP.card(root, 'By kernel, launching operator and launch configuration', 'kernels-config');
    el('p', { class: 'note' }, c2, 'The launching operator is the innermost operator around the runtime call that launched the kernel (matched by correlation id).');
    TP.table(c2, [{ key: 'name', label: 'Kernel', align: 'l', fmt: TP.nameLabeler(byCfg.map(r => r.name), chars(Math.min(330, (vw - 960) * .6), 9)), title: 'without return type, namespaces and arguments; the full name on hover', maxWidth: 'min(330px, calc((100vw - 960px) * .6))' },
      { key: 'op', label: 'Operator', align: 'l', maxWidth: 'min(200px, calc((100vw - 960px) * .4))' },
      { key: 'grid', label: 'Grid', fmt: dim, align: 'l' }, { key: 'block', label: 'Block', fmt: dim, align: 'l' },
      /* short headers (full words in their tooltips), the view as wide as the
       * window (up to 1,600 px) and the two names capped (narrower in a
       * narrower window: the other columns take up to 880 px): sixteen
       * columns fit a 1,200 px window without scrolling sideways */
      { key: 'regs', label: 'Regs', title: 'registers per thread' },
      { key: 'shmem', label: 'Smem', title: 'shared memory per block', fmt: v => v === null ? '-' : TP.fmtBytes(v) },
      /* the plugin's two columns of this table */
      { key: 'tc', label: 'TC', align: 'l', title: 'the kernel uses tensor cores (read from its name, as in the table above)' },
      { key: 'op_tc', label: 'Op TC', align: 'l', title: 'the launching operator is eligible for tensor cores (its name is on the TensorBoard plugin\u2019s list)' }]
      .concat(STATS.map(c => c.key === 'share' ? Object.assign({}, c, { label: '% time', title: c.label }) : c),
      [{ key: 'blocks_per_sm', label: 'Blk/SM', title: 'blocks per SM', fmt: num2 },
        { key: 'occupancy', label: 'Occ.', title: 'est. achieved occupancy %, weighted by duration', fmt: occ }]),
    byCfg, { sortBy: 'total', search: true, limit: 100, id: 'kernels-by-config' });
    leftOut(c2, d.by_config);
  }

  TP.view({
    key: 'kernels', title: 'Kernels', order: 30, wide: true,
    missing: 'no device kernels in the traces (a CPU-only profile)',
    render: render
  });
})();
