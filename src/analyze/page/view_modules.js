'use strict';
/* view_modules.js - the Modules view: the nn.Module tree of a with_modules
 * trace (calls, host total/self, device total per module) and Lightning's
 * hook table. Data: D.modules (view_modules.c). */
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
    const t = el('table', { id: 'modules-tree' }, el('div', { class: 'tp-table-wrap' }, parent));
    const hr = el('tr', {}, el('thead', {}, t));
    const cols = [['Module', 'l'], ['Calls', 'r'], ['Host total', 'r'], ['Host self', 'r', 'total minus its child modules'], ['Mean', 'r'], ['Device total', 'r']];
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
      for (const v of [TP.fmtNum(m.calls), dur(m.total), dur(m.self), dur(m.calls ? m.total / m.calls : 0), dur(m.dtotal)]) el('td', { class: 'r' }, tr, v);
      trs.set(m.id, tr);
    }
    return rows;
  }

  function render(root, d) {
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
