'use strict';
/* view_modules.js - the Modules view: the nn.Module tree of a with_modules
 * trace (calls, host total/self, device total/self per module), the module
 * timeline (each call a bar on its thread, nested) and Lightning's hook
 * table. Data: D.modules (view_modules.c). */
(function () {
  const el = TP.el;
  const dur = v => TP.fmtDur(v);

  /* rows in tree order (children by total, largest first) with depth and self */
  function treeRows(mods) {
    const byId = new Map(mods.map(m => [m.id, Object.assign({ children: [] }, m)]));
    const roots = [];
    for (const m of byId.values()) {
      const p = byId.get(m.parent);
      if (p && m.parent !== m.id) p.children.push(m); else roots.push(m);
    }
    const out = [];
    const walk = (m, depth) => {
      m.depth = depth;
      m.self = m.total - m.children.reduce((a, c) => a + c.total, 0);
      out.push(m);
      m.children.sort((a, b) => b.total - a.total).forEach(c => walk(c, depth + 1));
    };
    roots.sort((a, b) => b.total - a.total).forEach(r => walk(r, 0));
    return out;
  }

  function tree(parent, mods) {
    const rows = treeRows(mods);
    const device = mods.some(m => m.dtotal);  /* a CPU-only trace: no device columns */
    const t = el('table', { id: 'modules-tree' }, el('div', { class: 'tp-table-wrap' }, parent));
    const hr = el('tr', {}, el('thead', {}, t));
    const cols = [['Module', 'l'], ['Calls', 'r'], ['Host total', 'r'], ['Host self', 'r', 'total minus its child modules'], ['Mean', 'r'], ['Device total', 'r', 'kernels, copies and sets launched inside the module, its child modules included'],
      ['Device self', 'r', 'kernels, copies and sets launched by the module\u2019s own operators (those whose innermost module it is), not by its child modules']];
    if (!device) cols.splice(5);
    for (const [label, a, title] of cols) el('th', { class: a, title: title }, hr, label);
    const tb = el('tbody', {}, t);
    const trs = new Map();
    for (const m of rows) {
      const tr = el('tr', { 'data-id': m.id, 'data-depth': m.depth }, tb);
      const td = el('td', { class: 'l', style: 'padding-left:' + (6 + 16 * m.depth) + 'px', title: m.name }, tr);
      if (m.children.length) {
        const b = el('button', { type: 'button', class: 'twisty', 'aria-expanded': 'true', style: 'border:0;background:none;cursor:pointer;padding:0 4px 0 0;font:inherit' }, td, '\u25BE');
        b.addEventListener('click', () => {
          const open = b.getAttribute('aria-expanded') !== 'true';
          b.setAttribute('aria-expanded', open ? 'true' : 'false');
          b.textContent = open ? '\u25BE' : '\u25B8';
          const setVis = (n, vis) => n.children.forEach(c => { const r = trs.get(c.id); r.hidden = !vis; setVis(c, vis && r.dataset.closed !== '1'); });
          tr.dataset.closed = open ? '0' : '1';
          setVis(m, open);
        });
      }
      td.appendChild(document.createTextNode(m.name));
      const cells = [TP.fmtNum(m.calls), dur(m.total), dur(m.self), dur(m.calls ? m.total / m.calls : 0)];
      if (device) cells.push(dur(m.dtotal), dur(m.dself || 0));
      for (const v of cells) el('td', { class: 'r' }, tr, v);
      trs.set(m.id, tr);
    }
    return rows;
  }


  /* The module timeline: one lane per thread, a row per nesting depth, each
   * call a bar (its module's colour; name, duration and start on hover;
   * the name inside when it fits). Drag to zoom, double-click to reset. */
  function timeline(parent, t, laneName) {
    const mods = new Map(t.modules.map(m => [m[0], { parent: m[1], name: m[2] }]));
    const depthOf = id => { let d = 0; for (let m = mods.get(id); m && m.parent && d < 64; m = mods.get(m.parent)) d++; return d; };
    const colorOf = new Map();
    const color = name => { if (!colorOf.has(name)) colorOf.set(name, TP.COLORS[colorOf.size % TP.COLORS.length]); return colorOf.get(name); };
    const calls = t.calls.map(c => ({ lane: c[0], start: c[1], dur: c[2], id: c[3], depth: depthOf(c[3]) }));
    const depths = t.lanes.map(() => 0);
    let end = 0;
    for (const c of calls) { depths[c.lane] = Math.max(depths[c.lane], c.depth + 1); end = Math.max(end, c.start + c.dur); }
    const rowH = 16, laneGap = 22, L = 110, R = 24, top = 8, axisH = 28;
    const laneY = [];
    let y = top;
    for (let i = 0; i < t.lanes.length; i++) { laneY.push(y + laneGap - 6); y += laneGap + depths[i] * rowH; }
    const W = TP.W, H = y + axisH;
    const box = el('div', { id: 'modules-timeline' }, parent);
    let view = [0, end || 1];
    function draw() {
      box.textContent = '';
      const svg = el('svg:svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', 'data-chart': 'modules-timeline' }, box);
      const [a, b] = view;
      const sx = v => L + (v - a) / (b - a) * (W - L - R);
      const ticks = TP.kindTicks(a, b, 8, 'ns');   /* keeps its unit and decimals: filtered in the loop */
      const fmt = TP.tickFormat(ticks, 'ns');
      for (const v of ticks) {
        if (v < a || v > b) continue;
        el('svg:line', { x1: sx(v), x2: sx(v), y1: top, y2: H - axisH, class: 'grid' }, svg);
        el('svg:text', { x: sx(v), y: H - axisH + 15, 'text-anchor': 'middle', class: 'xtick' }, svg, fmt(v));
      }
      el('svg:line', { x1: L, x2: W - R, y1: H - axisH, y2: H - axisH, class: 'axis' }, svg);
      t.lanes.forEach((ln, i) => el('svg:text', { x: 4, y: laneY[i] - 4, class: 'lbl lane', 'data-pid': ln[0], 'data-tid': ln[1] }, svg, laneName(ln[0], ln[1])));
      const g = el('svg:g', {}, svg);
      for (const c of calls) {
        if (c.start + c.dur < a || c.start > b) continue;
        const x0 = Math.max(L, sx(c.start)), x1 = Math.min(W - R, sx(c.start + c.dur));
        const name = (mods.get(c.id) || { name: '?' }).name;
        const yb = laneY[c.lane] + c.depth * rowH;
        const r = el('svg:rect', { x: x0, y: yb, width: Math.max(0.5, x1 - x0), height: rowH - 2, fill: color(name), class: 'bar', 'data-module': name }, g);
        el('svg:title', {}, r, name + ': ' + TP.fmtDur(c.dur) + ' at ' + TP.fmtDur(c.start));
        /* the name inside the bar when it fits (about 6.5 px a character at the chart's font) */
        if (x1 - x0 > 6.5 * name.length + 8)
          el('svg:text', { x: x0 + 4, y: yb + rowH - 6, class: 'bar-label', style: 'fill:#fff', 'pointer-events': 'none' }, g, name);
      }
      /* drag to zoom */
      let from = null;
      const toX = e => { const r = svg.getBoundingClientRect(); return a + ((e.clientX - r.left) / r.width * W - L) / (W - L - R) * (b - a); };
      svg.addEventListener('mousedown', e => { from = toX(e); });
      svg.addEventListener('mouseup', e => {
        if (from === null) return;
        const to = toX(e);
        if (Math.abs(to - from) > (b - a) / 200) { view = [Math.max(0, Math.min(from, to)), Math.min(end, Math.max(from, to))]; draw(); }
        from = null;
      });
      svg.addEventListener('dblclick', () => { view = [0, end || 1]; draw(); });
    }
    draw();
    return calls;
  }

  /* A thread as the Timeline names it (the trace's thread name, the last it
   * was given), with its pid; "pid P tid T" where the Timeline has no row of it. */
  function laneNamer(D) {
    const rows = (D && D.timeline && D.timeline.rows) || [];
    return (pid, tid) => {
      const r = rows.find(x => x.kind === 'thread' && x.pid === pid && x.tid === tid);
      return r ? r.label + ' \u00b7 pid ' + pid : 'pid ' + pid + ' tid ' + tid;
    };
  }

  function render(root, d, D) {
    if (d.modules.length) {
      const c = TP.card(root, 'Module tree', 'modules-card');
      el('p', { class: 'note' }, c, 'nn.Module calls (with_modules=True frames, or Lightning\u2019s [pl][module] ranges): host time is the module\u2019s forward on the CPU thread, device time the kernels its operators launched. Modules of the same name at the same place in the tree are one row.');
      const rows = tree(c, d.modules);
      const top = rows.filter(r => r.depth > 0).sort((a, b) => b.self - a.self).slice(0, 12);
      if (top.length) el('h3', {}, c, 'Host self time of the ' + top.length + ' busiest modules (below the root)');
      if (top.length)
        TP.barChart(c, { labels: top.map(r => r.name), series: [{ label: 'host self', values: top.map(r => Math.max(0, r.self)) }], fmt: dur, kind: 'ns', attrs: { 'data-chart': 'modules-self' } });
      if (d.modules_left_out) el('p', { class: 'note' }, c, d.modules_left_out + ' more modules are left out of this page.');
    }
    if (d.timeline) {
      const t = d.timeline;
      const c = TP.card(root, 'Module timeline', 'modules-timeline-card');
      el('p', { class: 'note', 'data-calls': t.calls.length, 'data-all-calls': t.all_calls }, c, 'Each nn.Module call is a bar on the thread that ran it, nested as the calls nest (time from the first call shown). ' +
        (t.calls.length < t.all_calls ? 'The first ' + TP.fmtNum(t.calls.length) + ' of ' + TP.fmtNum(t.all_calls) + ' module calls are drawn (the page carries at most that many). ' : 'All ' + TP.fmtNum(t.all_calls) + ' module calls are drawn. ') +
        'Drag across the chart to zoom in, double-click to zoom out.');
      timeline(c, t, laneNamer(D));
    }
    if (d.hooks.length) {
      const c = TP.card(root, 'Lightning hooks', 'hooks-card');
      el('p', { class: 'note' }, c, 'Spans named [Owner]hook, as Lightning\u2019s profilers write them ([LightningModule], [Callback], [Strategy], loops; [pl][profile] prefix or not). Hooks without an owner are the Trainer\u2019s.');
      const rows = d.hooks.map(h => {
        const n = h.name.startsWith('[pl][profile]') ? h.name.slice(13) : h.name;
        const owned = n.startsWith('[') && n.indexOf(']') > 1;
        return Object.assign({}, h, { hook: owned ? n.slice(n.indexOf(']') + 1) : n, owner: owned ? n.slice(1, n.indexOf(']')) : '(Trainer)', mean: h.calls ? h.total / h.calls : 0 });
      });
      TP.table(c, [{ key: 'owner', label: 'Owner', align: 'l' }, { key: 'hook', label: 'Hook', align: 'l' }, { key: 'calls', label: 'Calls' },
        { key: 'total', label: 'Total', fmt: dur }, { key: 'mean', label: 'Mean', fmt: dur }, { key: 'max', label: 'Max', fmt: dur },
        { key: 'dtotal', label: 'Device total', fmt: dur }], rows, { sortBy: 'total', search: true, id: 'hooks-table' });
      if (d.hooks_left_out) el('p', { class: 'note' }, c, d.hooks_left_out + ' more hooks are left out of this page.');
    }
  }

  TP.view({
    key: 'modules', title: 'Modules', order: 60,
    missing: 'no nn.Module frames (profile with with_modules=True) and no Lightning hooks',
    render: render
  });
})();
