'use strict';
/* view_captures.js - the Captures view: what the flight recorder kept of
 * the run's bad moments (docs/CAPTURES.md). Data: D.captures
 * (view_captures.c). */
(function () {
  const el = TP.el;
  const WHY = {
    slow_step: 'a step over capture_slow_step \u00d7 the rolling median',
    exception: 'an exception escaped the program',
    signal: 'asked for (SIGUSR1 or trainprof capture)',
    hang: 'no step ended for hang_timeout',
  };

  function render(root, d) {
    const c = TP.card(root, 'Captures', 'captures-card');
    el('p', { class: 'note' }, c, 'The flight recorder keeps the last capture_steps steps in memory and writes them ' +
      'out when something goes wrong: each row is one capture, its trace first among its files (open it in ' +
      'Perfetto or with trainprof report). A hang capture\u2019s .hang.txt holds every thread\u2019s stack; ' +
      '`trainprof ranks JOB_DIR` says which rank a hung job waits for.');
    const t = el('table', { id: 'captures-table' }, el('div', { class: 'tp-table-wrap' }, c));
    const hr = el('tr', {}, el('thead', {}, t));
    const multi = d.captures.some(x => x.rank >= 0);
    for (const h of (multi ? ['Rank'] : []).concat(['Why', 'Step', 'When', 'Detail', 'Files']))
      el('th', { class: h === 'Step' || h === 'Rank' ? 'r' : 'l' }, hr, h);
    const tb = el('tbody', {}, t);
    for (const x of d.captures) {
      const tr = el('tr', { 'data-reason': x.reason }, tb);
      if (multi) el('td', { class: 'r' }, tr, x.rank >= 0 ? String(x.rank) : '-');
      el('td', { class: 'l', title: WHY[x.reason] || '' }, tr, x.reason);
      el('td', { class: 'r' }, tr, x.step >= 0 ? TP.fmtNum(x.step) : '-');
      el('td', { class: 'l' }, tr, x.time);
      el('td', { class: 'l', title: x.detail }, tr, x.detail + (x.detail_more ? ' \u2026' : ''));
      const files = el('td', { class: 'l' }, tr);
      x.files.forEach((f, i) => {
        if (i) files.appendChild(document.createTextNode(' '));
        el('a', { href: f }, files, f.slice(f.lastIndexOf('/') + 1));
      });
    }
    if (d.damaged) el('p', { class: 'note' }, c, d.damaged + ' captures.json file(s) were cut short: the captures listed before the damage are shown.');
  }

  TP.view({
    key: 'captures', title: 'Captures', order: 80,
    missing: 'no captures: the run had no slow step, exception, signal or hang (or profiling.capture was off)',
    render: render
  });
})();
