'use strict';
/* common.js - the report page's framework: the view registry, the tabs, and
 * the helpers every view draws with (formatting, nice ticks, tables, charts).
 *
 * A view registers itself with TP.view({key, title, order, render, wide}); the
 * page gives it one tab and one <section> (wide: as wide as the window, up to
 * 1,600 px, for tables of many columns), and calls render(root, D[key], D)
 * when D[key] is not null. A view that throws shows its error in its own tab;
 * the others still draw. Every string from a trace is data: it only ever
 * reaches the page through textContent or an attribute value.
 * Written for this project; no library, no network. */
const TP = (function () {
  const NS = 'http://www.w3.org/2000/svg';
  const COLORS = ['#3b6fd8', '#e8702a', '#2ca58d', '#c23b80', '#8c6bd8', '#d8b23b', '#5ab0e8', '#7a7f8c', '#b5523b', '#4f9a3a'];
  const views = [];
  const W = 960, H = 270, L = 70, R = 24, T = 38, B = 34;

  function view(v) { views.push(v); }

  /* el('div', {class: 'x'}, parent, 'text'); 'svg:rect' makes an SVG element. */
  function el(tag, attrs, parent, text) {
    const e = tag.startsWith('svg:') ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
    for (const k in attrs || {}) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (parent) parent.appendChild(e);
    return e;
  }

  /* ---- numbers ------------------------------------------------------------------- */
  function finite(v) { return typeof v === 'number' && isFinite(v); }
  /* decimals that keep about three significant digits for magnitude a */
  function digitsFor(a) { return a >= 100 ? 0 : a >= 10 ? 1 : 2; }

  function fmtNum(v, digits) {
    if (!finite(v)) return '-';
    const a = Math.abs(v);
    if (digits !== undefined) return v.toFixed(digits);
    if (Number.isInteger(v) && a < 1e6) return v.toLocaleString('en-US');
    if (a >= 1e9) return (v / 1e9).toFixed(digitsFor(a / 1e9)) + 'G';
    if (a >= 1e6) return (v / 1e6).toFixed(digitsFor(a / 1e6)) + 'M';
    if (a >= 1e4) return (v / 1e3).toFixed(digitsFor(a / 1e3)) + 'k';
    if (a === 0) return '0';
    if (a < 0.01) return v.toPrecision(3);
    return v.toFixed(digitsFor(a));
  }

  const DUR_UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, '\u00b5s'], [1, 'ns']];
  const BYTE_UNITS = [[1099511627776, 'TiB'], [1073741824, 'GiB'], [1048576, 'MiB'], [1024, 'KiB'], [1, 'B']];
  /* The largest unit of units ([[size, name]], largest first) that v reaches. */
  function unitOf(units, v) {
    const a = Math.abs(v || 0);
    for (const u of units) if (a >= u[0]) return { div: u[0], unit: u[1] };
    const last = units[units.length - 1];
    return { div: last[0], unit: last[1] };
  }
  function fmtIn(units, v, unit) {
    if (!finite(v)) return '-';
    const u = unit || unitOf(units, v);
    const x = v / u.div;
    return x.toFixed(u.div === 1 ? 0 : digitsFor(Math.abs(x))) + ' ' + u.unit;
  }
  /* The unit for durations up to ns (so one axis or column shares it). */
  function durUnit(ns) { return unitOf(DUR_UNITS, ns); }
  function fmtDur(ns, unit) { return ns === 0 ? '0' : fmtIn(DUR_UNITS, ns, unit); }
  function bytesUnit(b) { return unitOf(BYTE_UNITS, b); }
  function fmtBytes(b, unit) { return fmtIn(BYTE_UNITS, b, unit); }
  function fmtPct(v) { return finite(v) ? v.toFixed(Math.abs(v) >= 10 ? 1 : 2) + '%' : '-'; }

  /* Rounded tick values (1, 2, 2.5, 5 x 10^k) covering [lo, hi], about n of
   * them; .digits is the decimals they all share. */
  function niceTicks(lo, hi, n) {
    n = n || 5;
    if (!finite(lo) || !finite(hi)) { lo = 0; hi = 1; }
    if (hi < lo) { const t = lo; lo = hi; hi = t; }
    if (hi === lo) { const d = Math.abs(hi) || 1; lo -= d / 2; hi += d / 2; }
    const raw = (hi - lo) / Math.max(1, n);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / mag;
    /* 1, 2, 5 x 10^k only: a 2.5 step's labels are rounded in the unit shown (0, 3, 5, 8 ms) */
    const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    const first = Math.floor(lo / step + 1e-9) * step, last = Math.ceil(hi / step - 1e-9) * step;
    const ticks = [];
    for (let i = 0, v = first; v <= last + step / 2 && i < 100; i++, v = first + i * step)
      ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    const frac = step < 1 ? Math.ceil(-Math.log10(step) - 1e-9) : 0;
    ticks.digits = Math.max(0, Math.min(frac, 9));
    ticks.step = step;
    return ticks;
  }

  /* Tick labels sharing one unit and one number of decimals: kind 'ns'
   * (durations), 'bytes', or plain numbers. */
  /* Nice ticks of durations (kind 'ns') or bytes, rounded in the unit they
   * are shown in (MiB ticks at 0.5, 1, 1.5 MiB, not at 1,000,000 bytes). */
  function kindTicks(lo, hi, n, kind) {
    if (kind !== 'ns' && kind !== 'bytes') return niceTicks(lo, hi, n);
    const u = (kind === 'ns' ? durUnit : bytesUnit)(Math.max(Math.abs(lo), Math.abs(hi)));
    const t = niceTicks(lo / u.div, hi / u.div, n);
    const out = t.map(v => v * u.div);
    out.digits = t.digits; out.step = t.step * u.div; out.unit = u;
    return out;
  }

  function tickFormat(ticks, kind) {
    const top = Math.max(Math.abs(ticks[0]), Math.abs(ticks[ticks.length - 1]));
    if (kind === 'ns' || kind === 'bytes') {
      const u = ticks.unit || (kind === 'ns' ? durUnit : bytesUnit)(top);
      const d = ticks.unit ? ticks.digits : Math.max(0, Math.ceil(-Math.log10(ticks.step / u.div) - 1e-9));
      return v => v === 0 ? '0' : (v / u.div).toFixed(d) + ' ' + u.unit;
    }
    if (kind === 'pct') return v => v.toFixed(ticks.digits) + '%';
    return v => fmtNum(v, top >= 1e4 ? undefined : ticks.digits);
  }

  /* ticks of an integer axis (steps): whole numbers only */
  function intTicks(t, on) {
    if (!on || t.step >= 1) return t;
    const out = [];
    for (let v = Math.ceil(t[0]); v <= Math.floor(t[t.length - 1]); v++) out.push(v);
    out.step = 1; out.digits = 0;
    return out.length ? out : t;
  }

  /* ---- downsampled series (the C side's tpa_ds: columns of consecutive points) ---- */
  /* value v of a downsampler as a line-chart series: column centres, means,
   * min-max band, each times scale */
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
  /* [lowest min, highest max] of values vs of a downsampler */
  function dsRange(ds, vs) {
    let lo = Infinity, hi = -Infinity;
    for (const v of vs) for (let c = 0; c < ds.x0.length; c++) {
      if (ds.min[v][c] !== null) lo = Math.min(lo, ds.min[v][c]);
      if (ds.max[v][c] !== null) hi = Math.max(hi, ds.max[v][c]);
    }
    return [lo, hi];
  }

  /* ---- charts: shared frame ------------------------------------------------------- */
  /* An SVG with y ticks on the left (formatted by yfmt), x ticks below, the
   * axis titles outside the plot area. Returns {svg, sx, sy}. */
  function frame(parent, o) {
    const svg = el('svg:svg', Object.assign({ viewBox: '0 0 ' + W + ' ' + H, class: 'chart' }, o.attrs || {}), parent);
    const yt = kindTicks(o.y0, o.y1, 5, o.yKind), xt = o.xticks || intTicks(kindTicks(o.x0, o.x1, 8, o.xKind), o.xInt);
    const y0 = yt[0], y1 = yt[yt.length - 1];
    const x0 = o.xband ? o.x0 : Math.min(o.x0, xt[0]), x1 = o.xband ? o.x1 : Math.max(o.x1, xt[xt.length - 1]);
    const sx = x => L + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (W - L - R);
    const sy = y => T + (1 - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5)) * (H - T - B);
    const yfmt = o.yKind || !o.yfmt ? tickFormat(yt, o.yKind) : o.yfmt;
    for (const y of yt) {
      el('svg:line', { x1: L, x2: W - R, y1: sy(y), y2: sy(y), class: 'grid' }, svg);
      /* the bottom label sits a little higher: clear of the first x label below it */
      el('svg:text', { x: L - 6, y: sy(y) + (y === y0 ? 1 : 4), 'text-anchor': 'end', class: 'ytick' }, svg, yfmt(y));
    }
    const xfmt = o.xfmt || tickFormat(xt, o.xKind);
    for (const x of xt) {
      if (x < x0 || x > x1) continue;
      el('svg:text', { x: sx(x), y: H - B + 15, 'text-anchor': 'middle', class: 'xtick' }, svg, xfmt(x));
    }
    el('svg:line', { x1: L, x2: L, y1: T, y2: H - B, class: 'axis' }, svg);
    el('svg:line', { x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'axis' }, svg);
    if (o.yTitle) el('svg:text', { x: 4, y: 14, class: 'lbl' }, svg, o.yTitle);
    if (o.xTitle) el('svg:text', { x: W - R, y: H - 4, 'text-anchor': 'end', class: 'lbl' }, svg, o.xTitle);
    return { svg: svg, sx: sx, sy: sy, y0: y0, y1: y1, x0: x0, x1: x1 };
  }

  function legend(parent, items) {
    const leg = el('div', { class: 'legend' }, parent);
    for (const it of items) {
      const sp = el('span', {}, leg);
      el('i', { style: 'background:' + it.color }, sp);
      sp.appendChild(document.createTextNode(it.label));
    }
    return leg;
  }

  /* Lines over a numeric x: o.series = [{label, x:[], y:[], lo?:[], hi?:[]}]
   * (lo/hi draw a min-max band), o.yfmt, o.yTitle, o.xTitle, o.windows
   * ([[a, b]] shaded), o.attrs (data-* of the svg), o.readout(x, series, i)
   * the hover text, o.onSelect(a, b) (drag to choose an x range; null clears). */
  function lineChart(parent, o) {
    const all = o.series.filter(s => s.x.length);
    if (!all.length) return null;
    let x0 = Infinity, x1 = -Infinity, y0 = o.yMin !== undefined ? o.yMin : Infinity, y1 = -Infinity;
    for (const s of all) {
      for (let i = 0; i < s.x.length; i++) {
        const lo = s.lo ? s.lo[i] : s.y[i], hi = s.hi ? s.hi[i] : s.y[i];
        if (!finite(s.y[i])) continue;
        x0 = Math.min(x0, s.x[i]); x1 = Math.max(x1, s.x[i]);
        y0 = Math.min(y0, lo); y1 = Math.max(y1, hi);
      }
    }
    if (!finite(x0)) return null;
    /* a few points far above the rest (a warm-up step) would flatten them:
     * the axis stops above the rest, the points above it are marked */
    const ys = [];
    for (const s of all) for (const v of s.y) if (finite(v)) ys.push(v);
    ys.sort((a, b) => a - b);
    const p90 = ys[Math.floor(0.9 * (ys.length - 1))];
    let top = y1;
    if (o.clip !== false && ys.length >= 5 && p90 > 0 && ys[ys.length - 1] > 3 * p90) {
      let rest = -Infinity;
      for (const s of all) for (let i = 0; i < s.x.length; i++) {
        const v = s.hi ? s.hi[i] : s.y[i];
        if (finite(s.y[i]) && s.y[i] <= 3 * p90) rest = Math.max(rest, v <= 3 * p90 ? v : s.y[i]);
      }
      top = rest * 1.1;
    }
    /* a flat series (all within 20 % of the axis top) would zoom its noise
     * into a V: the axis starts at 0 */
    if (o.yMin === undefined && y0 > 0 && top - y0 < 0.2 * top) y0 = 0;
    /* one x (a trace of one step): its one tick, the point in the middle
     * (rounded ticks around it would name steps that are not there) */
    const f = frame(parent, Object.assign({}, o, { x0: x0, x1: x1, y0: y0, y1: top }, x1 === x0 && !o.xticks ? { xticks: [x0] } : {}));
    const cy = v => f.sy(Math.min(v, f.y1));
    const svg = f.svg;
    for (const w of o.windows || []) {
      const a = Math.max(w[0], x0), b = Math.min(w[1], x1);
      if (b < a) continue;
      el('svg:rect', { x: f.sx(a) - 1, y: T, width: Math.max(2, f.sx(b) - f.sx(a) + 2), height: H - T - B, class: 'win', 'data-window': w[0] + '-' + w[1] }, svg);
    }
    const items = [];
    let clipped = false;
    all.forEach((s, k) => {
      const col = s.color || COLORS[k % COLORS.length];
      const idx = [];
      for (let i = 0; i < s.x.length; i++) if (finite(s.y[i])) idx.push(i);
      if (s.lo && s.hi) {
        const band = idx.map(i => f.sx(s.x[i]) + ',' + cy(s.hi[i])).concat(idx.slice().reverse().map(i => f.sx(s.x[i]) + ',' + cy(s.lo[i])));
        el('svg:polygon', { points: band.join(' '), fill: col, opacity: 0.2 }, svg);
      }
      /* o.steps: a value holds until the next sample (memory in use), drawn as steps, not ramps */
      const pts = [];
      idx.forEach((i, n) => {
        if (o.steps && n) pts.push(f.sx(s.x[i]) + ',' + cy(s.y[idx[n - 1]]));
        pts.push(f.sx(s.x[i]) + ',' + cy(s.y[i]));
      });
      el('svg:polyline', { points: pts.join(' '), fill: 'none', stroke: col,
        'stroke-width': 1.6, class: 'series', 'data-series': s.label, 'data-n': idx.length }, svg);
      /* a line of one point draws nothing: a dot */
      if (idx.length === 1)
        el('svg:circle', { cx: f.sx(s.x[idx[0]]), cy: cy(s.y[idx[0]]), r: 3.5, fill: col, class: 'dot', 'data-series': s.label }, svg);
      let marked = 0, freeFrom = -Infinity;
      for (const i of idx) {
        if (s.y[i] <= f.y1) continue;
        const g = el('svg:g', { class: 'clipped', 'data-x': s.x[i], 'data-y': s.y[i] }, svg);
        const text = (o.fmt || o.yfmt || fmtNum)(s.y[i]), x = f.sx(s.x[i]);
        el('svg:rect', { x: x - 3, y: T - 4, width: 6, height: 4, class: 'clip' }, g)
          .appendChild(el('svg:title', {}, null, text));
        /* a value is written where it does not run into the one before it
         * (about 6.5 px a character); else it is on hover */
        if (marked >= 8 || x + 5 < freeFrom) continue;
        el('svg:text', { x: x + 5, y: T + 8, class: 'lbl' }, g, text);
        freeFrom = x + 5 + text.length * 6.5 + 4;
        marked++;
      }
      if (marked) clipped = true;
      items.push({ color: col, label: s.label });
    });
    if (o.windows && o.windows.length) items.push({ color: '#ffd86b', label: o.windowLabel || 'traced steps' });
    legend(parent, items);
    if (clipped) el('p', { class: 'note' }, parent, 'Points above the axis (e.g. a warm-up step) are marked red at the top, with their value (on hover where the values would overlap).');
    const ro = el('div', { class: 'readout' }, parent);
    const px2x = ev => { const r = svg.getBoundingClientRect(); const px = (ev.clientX - r.left) * W / r.width; return f.x0 + (px - L) / (W - L - R) * (f.x1 - f.x0); };
    svg.addEventListener('mousemove', ev => {
      const x = px2x(ev);
      let best = null;
      for (const s of all) for (let i = 0; i < s.x.length; i++)
        if (finite(s.y[i]) && (!best || Math.abs(s.x[i] - x) < Math.abs(best[0].x[best[1]] - x))) best = [s, i];
      if (best) ro.textContent = o.readout ? o.readout(best[0], best[1]) : best[0].label + ' at ' + fmtNum(best[0].x[best[1]]) + ': ' + (o.yfmt || fmtNum)(best[0].y[best[1]]);
    });
    if (o.onSelect) {
      let start = null, rect = null;
      svg.style.cursor = 'crosshair';
      svg.addEventListener('mousedown', ev => { start = px2x(ev); if (rect) rect.remove(); rect = el('svg:rect', { class: 'sel', y: T, height: H - T - B, x: f.sx(start), width: 0 }, svg); ev.preventDefault(); });
      svg.addEventListener('mousemove', ev => { if (start === null) return; const x = px2x(ev); rect.setAttribute('x', f.sx(Math.min(start, x))); rect.setAttribute('width', Math.abs(f.sx(x) - f.sx(start))); });
      svg.addEventListener('mouseup', ev => {
        if (start === null) return;
        const x = px2x(ev), a = Math.min(start, x), b = Math.max(start, x);
        start = null;
        if (Math.abs(f.sx(b) - f.sx(a)) < 3) { rect.remove(); rect = null; o.onSelect(null, null); } else o.onSelect(a, b);
      });
    }
    return svg;
  }

  /* Horizontal bars, one per label, each labelled with its value: o.labels,
   * o.series = [{label, values}] (stacked when several), o.fmt (the value
   * labels), o.kind ('ns', 'bytes': the axis ticks), o.colors (one per
   * label, with a single series), o.attrs. */
  /* s shortened to at most n characters with an ellipsis in the middle (the
   * start and the end of a long C++ or module name both tell it apart). */
  function midTrunc(s, n) {
    s = String(s);
    if (s.length <= n) return s;
    const head = Math.ceil((n - 1) / 2), tail = n - 1 - head;
    return s.slice(0, head) + '\u2026' + (tail ? s.slice(s.length - tail) : '');
  }
  /* the bar labels' room: 280 px at 11 px, wide glyphs (W, M, _) included */
  const LABEL_CHARS = 38;

  /* s split at its top-level commas (not inside <>, (), []). */
  function splitTop(s) {
    const out = [];
    let depth = 0, from = 0;
    for (let i = 0; i < s.length; i++) {
      const ch = s[i];
      if (ch === '<' || ch === '(' || ch === '[') depth++;
      else if (ch === '>' || ch === ')' || ch === ']') depth--;
      else if (ch === ',' && depth === 0) { out.push(s.slice(from, i).trim()); from = i + 1; }
    }
    out.push(s.slice(from).trim());
    return out;
  }

  /* A C++ kernel signature as a GPU engineer reads it: no return type, no
   * namespaces, no argument list; the kernel and its template arguments.
   * `void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>,
   * at::detail::Array<char*, 3> >(int, ...)` -> `vectorized_elementwise_kernel<4,
   * AddFunctor<float>, Array<char*, 3> >`. Other names are kept as they are. */
  function shortName(name) {
    let s = String(name);
    const sig = /^void /.test(s) || /::/.test(s) || /\([^()]*\*[^()]*\)$/.test(s);
    if (!/[<(]/.test(s) || !sig) return s;
    if (s.endsWith(')')) {  /* the argument list: the last top-level (...) */
      let depth = 0;
      for (let i = s.length - 1; i > 0; i--) {
        if (s[i] === ')') depth++;
        else if (s[i] === '(' && --depth === 0) { s = s.slice(0, i).trimEnd(); break; }
      }
    }
    let depth = 0, cut = -1;  /* the return type: up to the last top-level space */
    for (let i = 0; i < s.length; i++) {
      if (s[i] === '<' || s[i] === '(') depth++;
      else if (s[i] === '>' || s[i] === ')') depth--;
      else if (s[i] === ' ' && depth === 0) cut = i;
    }
    if (cut >= 0 && cut < s.length - 1) s = s.slice(cut + 1);
    s = s.replace(/\(anonymous namespace\)::/g, '').replace(/\b[A-Za-z_][A-Za-z0-9_]*::/g, '');
    return s || String(name);
  }

  const PLAIN_ARG = /^(-?[\d.]+[uUlLfF]*|true|false|(unsigned |signed )?(float|double|int|long|short|char|bool|half|bfloat16|__half|__nv_bfloat16|Half|BFloat16|int64_t|int32_t|uint32_t|uint64_t)\*?)$/;

  /* The kernel name and its template arguments: [base, args] or null. */
  function templateParts(s) {
    const lt = s.indexOf('<');
    return lt > 0 && s.endsWith('>') ? [s.slice(0, lt), splitTop(s.slice(lt + 1, -1).trim())] : null;
  }

  /* shortName(name) in n characters. The template arguments kept are those
   * in `distinct` (the positions where kernels of the same name differ), or
   * else those that are not plain (numbers, builtin types); the others are …,
   * then nested arguments become <…>, then the kernel's own name is cut in
   * the middle: what tells kernels apart stays. */
  function fitName(name, n, distinct) {
    const s = shortName(name);
    if (s.length <= n) return s;
    const tp = templateParts(s);
    if (!tp) return midTrunc(s, n);
    const [base, full] = tp, nested = full.map(a => a.replace(/<.*>/, '<\u2026>'));
    let keep = full.map((a, i) => distinct ? distinct.has(i) : !PLAIN_ARG.test(a));
    if (!keep.some(Boolean)) keep = full.map((a, i) => i === 0);
    const tail = (args, k) => {
      const parts = [];
      args.forEach((a, i) => {
        if (k[i]) parts.push(a);
        else if (parts[parts.length - 1] !== '\u2026') parts.push('\u2026');
      });
      return '<' + parts.join(', ') + '>';
    };
    const tails = [tail(full, keep), tail(nested, keep)];
    for (let k = keep.slice(), i = full.length - 1; i > 0; i--) {
      if (!k[i] || k.filter(Boolean).length === 1) continue;
      k = k.slice();
      k[i] = false;
      tails.push(tail(nested, k));
    }
    for (const t of tails.slice(0, 2)) if (base.length + t.length <= n) return base + t;
    for (const t of tails.slice(0, 2)) if (n - t.length >= 12) return midTrunc(base, n - t.length) + t;
    for (const t of tails) if (base.length + t.length <= n) return base + t;
    for (const t of tails) if (n - t.length >= 12) return midTrunc(base, n - t.length) + t;
    return midTrunc(s, n);
  }

  /* For each name, the template argument positions where it differs from
   * the other kernels of its name in names (undefined when it has none). */
  function distinctArgs(names) {
    const groups = new Map();
    const parts = names.map(nm => templateParts(shortName(nm)));
    parts.forEach((p, i) => { if (p) groups.set(p[0], (groups.get(p[0]) || []).concat([i])); });
    const out = names.map(() => undefined);
    for (const ix of groups.values()) {
      if (ix.length < 2) continue;
      const len = Math.max(...ix.map(i => parts[i][1].length)), d = new Set();
      for (let k = 0; k < len; k++)
        if (new Set(ix.map(i => parts[i][1][k])).size > 1) d.add(k);
      for (const i of ix) out[i] = d;
    }
    return out;
  }

  /* Labels for names in n characters each, no two the same: names whose
   * labels are the same are shown around where their short names first
   * differ ("…adagrad_weighted_kernel_cta…"), then cut in the middle, and
   * numbered as the last resort (the same name twice). The full name goes
   * on hover. */
  function chartLabels(names, n) {
    const distinct = distinctArgs(names);
    const around = ix => {  /* the part from a little before where they first differ */
      const shorts = ix.map(i => shortName(names[i]));
      let p = 0;
      while (shorts.every(x => p < x.length && x[p] === shorts[0][p])) p++;
      return ix.map((i, k) => {
        const x = shorts[k];
        if (x.length <= n) return x;
        const from = Math.max(0, Math.min(p - 10, x.length - (n - 1)));
        return (from ? '\u2026' : '') + x.slice(from, from + n - (from ? 2 : 1)) + '\u2026';
      });
    };
    const out = names.map((nm, i) => fitName(nm, n, distinct[i]));
    for (let w = 1; w <= 3; w++) {
      const seen = new Map();
      out.forEach((l, i) => seen.set(l, (seen.get(l) || []).concat([i])));
      const dups = [...seen.values()].filter(ix => ix.length > 1);
      if (!dups.length) break;
      for (const ix of dups) {
        const same = ix.every(i => String(names[i]) === String(names[ix[0]]));  /* nothing to tell apart but their order */
        if (w === 1 && !same) { around(ix).forEach((l, k) => { out[ix[k]] = l; }); continue; }
        if (w === 2 && !same) { for (const i of ix) out[i] = midTrunc(shortName(names[i]), n); continue; }
        if (w < 3) continue;
        ix.forEach((i, k) => { const tag = ' (' + (k + 1) + ')'; out[i] = midTrunc(out[i], n - tag.length) + tag; });
      }
    }
    /* numbered per group, two groups cut to one text can still meet: then
     * each label of theirs ends in its own index, which no other has */
    const count = new Map();
    out.forEach(l => count.set(l, (count.get(l) || 0) + 1));
    out.forEach((l, i) => {
      if (count.get(l) < 2) return;
      const tag = ' #' + (i + 1);
      out[i] = midTrunc(l.replace(/ \(\d+\)$/, ''), n - tag.length) + tag;
    });
    return out;
  }

  /* A table column's formatter of kernel names: each distinct name of names
   * as chartLabels shortens it to chars (a column's max-width over 8.4 px, a
   * wide glyph at 12.5 px), so a cell is never cut by its column and no two
   * kernels read the same; any other value as shortName writes it. */
  function nameLabeler(names, chars) {
    const distinct = Array.from(new Set(names.map(String)));
    const labels = chartLabels(distinct, chars), m = new Map(distinct.map((n, i) => [n, labels[i]]));
    return v => m.has(String(v)) ? m.get(String(v)) : shortName(v);
  }

  function barChart(parent, o) {
    const n = o.labels.length;
    if (!n) return null;
    const rowH = 20, top = 8, left = 280, right = 110, h = top + n * rowH + 24;
    const totals = o.labels.map((_, i) => o.series.reduce((a, s) => a + (s.values[i] || 0), 0));
    const max = Math.max(...totals, 0) || 1;
    const ticks = kindTicks(0, max, 5, o.kind), xmax = ticks[ticks.length - 1];
    const svg = el('svg:svg', Object.assign({ viewBox: '0 0 ' + W + ' ' + h, class: 'chart' }, o.attrs || {}), parent);
    const sx = v => left + v / xmax * (W - left - right);
    const fmt = o.fmt || fmtNum, tfmt = tickFormat(ticks, o.kind);
    for (const t of ticks) {
      el('svg:line', { x1: sx(t), x2: sx(t), y1: top, y2: h - 22, class: 'grid' }, svg);
      el('svg:text', { x: sx(t), y: h - 8, 'text-anchor': 'middle', class: 'xtick' }, svg, tfmt(t));
    }
    const shown = chartLabels(o.labels, LABEL_CHARS);
    o.labels.forEach((lab, i) => {
      const y = top + i * rowH;
      const name = shown[i];
      el('svg:text', { x: left - 6, y: y + 14, 'text-anchor': 'end', class: 'lbl' }, svg, name).appendChild(el('svg:title', {}, null, lab));
      let acc = 0;
      o.series.forEach((s, k) => {
        const v = s.values[i] || 0;
        if (v <= 0) return;
        const fill = o.series.length === 1 && o.colors ? o.colors[i] : s.color || COLORS[k % COLORS.length];
        el('svg:rect', { x: sx(acc), y: y + 3, width: Math.max(1, sx(acc + v) - sx(acc)), height: rowH - 6, fill: fill, class: 'bar' }, svg)
          .appendChild(el('svg:title', {}, null, lab + ' \u2014 ' + s.label + ': ' + fmt(v)));
        acc += v;
      });
      el('svg:text', { x: sx(acc) + 4, y: y + 14, class: 'val' }, svg, fmt(totals[i]));
    });
    if (o.series.length > 1) legend(parent, o.series.map((s, k) => ({ color: s.color || COLORS[k % COLORS.length], label: s.label })));
    return svg;
  }

  /* Vertical stacked bars, one per column: o.columns (x labels), o.series =
   * [{label, values}], o.fmt (values), o.yTitle, o.xTitle, o.attrs. A column
   * far above the rest (a warm-up step: more than 3x the median total) is
   * clipped at the axis top, drawn with a red cap and labelled with its
   * value, so it does not flatten the others. */
  function stackedBars(parent, o) {
    const n = o.columns.length;
    if (!n) return null;
    const totals = o.columns.map((_, c) => o.series.reduce((a, s) => a + (s.values[c] > 0 ? s.values[c] : 0), 0));
    const sorted = totals.slice().sort((a, b) => a - b), median = sorted[Math.floor((n - 1) / 2)];
    const max = sorted[n - 1];
    const rest = sorted.filter(t => t <= 3 * median);
    const clipAt = o.noClip || n < 3 || max <= 3 * median || !median ? max : Math.max(...rest) * 1.15;
    const fmt = o.fmt || fmtNum;
    const f = frame(parent, { x0: -0.5, x1: n - 0.5, xband: true, y0: 0, y1: clipAt || 1, yKind: o.yKind, yfmt: fmt, yTitle: o.yTitle, xTitle: o.xTitle,
      xticks: columnTicks(o.columns), xfmt: i => String(o.columns[i]), attrs: Object.assign({ 'data-columns': n, 'data-ymax': max }, o.attrs || {}) });
    const bw = Math.max(1, (W - L - R) / n * 0.8);
    const written = [];  /* [left, right, baseline] of the totals written */
    for (let c = 0; c < n; c++) {
      let acc = 0;
      const xc = f.sx(c);
      const g = el('svg:g', { class: 'col', 'data-column': o.columns[c], 'data-total': totals[c] }, f.svg);
      o.series.forEach((s, k) => {
        const v = s.values[c] > 0 ? s.values[c] : 0;
        if (!v) return;
        const a = Math.min(acc, f.y1), b = Math.min(acc + v, f.y1);
        acc += v;
        if (b <= a) return;
        el('svg:rect', { x: xc - bw / 2, y: f.sy(b), width: bw, height: Math.max(0.5, f.sy(a) - f.sy(b)), fill: s.color || COLORS[k % COLORS.length], class: 'bar' }, g)
          .appendChild(el('svg:title', {}, null, (o.columnLabel || '') + o.columns[c] + ' \u2014 ' + s.label + ': ' + fmt(v)));
      });
      /* a total is written where it does not run into the one before it
       * (about 6.5 px a character); else it is on hover */
      const text = fmt(totals[c]), half = text.length * 3.25 + 2;
      const free = y => !written.some(w => xc - half < w[1] && xc + half > w[0] && Math.abs(y - w[2]) < 13);
      if (totals[c] > f.y1) {
        el('svg:rect', { x: xc - bw / 2, y: T - 4, width: bw, height: 4, class: 'clip' }, g)
          .appendChild(el('svg:title', {}, null, (o.columnLabel || '') + o.columns[c] + ' \u2014 total ' + text));
        const lx = Math.max(xc, L + half);  /* clear of the y axis' top label */
        if (!written.some(w => lx - half < w[1] && lx + half > w[0] && Math.abs(T - 7 - w[2]) < 13)) {
          el('svg:text', { x: lx, y: T - 7, 'text-anchor': 'middle', class: 'lbl clipped' }, g, text);
          written.push([lx - half, lx + half, T - 7]);
        }
      } else if (n <= 24 && free(f.sy(totals[c]) - 3)) {
        el('svg:text', { x: xc, y: f.sy(totals[c]) - 3, 'text-anchor': 'middle', class: 'val' }, g, text);
        written.push([xc - half, xc + half, f.sy(totals[c]) - 3]);
      }
    }
    legend(parent, o.series.map((s, k) => ({ color: s.color || COLORS[k % COLORS.length], label: s.label })));
    if (clipAt < max) el('p', { class: 'note' }, parent, 'Columns marked red are taller than the axis (e.g. a warm-up step); their total is written above them (on hover where the totals would overlap).');
    return f.svg;
  }

  /* at most ~12 evenly spaced column indexes, always the first and the last */
  /* Column indices to label: about 12, a 1/2/5 x 10^k step apart, on
   * multiples of the step when the columns are numbered (steps 100, 105, ...). */
  function columnTicks(cols) {
    const n = cols.length;
    let step = 1;
    /* none of 1, 2, 5, 10 x mag is enough (over 120 columns): the next magnitude */
    for (let mag = 1; step < n / 12; mag *= 10) step = [1, 2, 5, 10].map(m => m * mag).find(v => v >= n / 12) || 10 * mag;
    const num = cols.map(Number);
    let first = 0;
    if (num.every(Number.isFinite)) while (first < Math.min(n, step) && num[first] % step !== 0) first++;
    if (first >= Math.min(n, step)) first = 0;
    const t = [];
    for (let i = first; i < n; i += step) t.push(i);
    return t;
  }

  /* ---- table ------------------------------------------------------------------------ */
  /* columns [{key, label, fmt, align: 'l'|'r', title, maxWidth (px, or a CSS length)}], rows [objects];
   * opts {sortBy, desc (default true), search, limit, id, onRow(row, tr), textWidth}.
   * Click a header to sort; the search box filters on every text column;
   * onRow, when given, is called with a clicked row's object. Numeric cells
   * never wrap; a text cell longer than its column (max 330 px) ends in an
   * ellipsis and shows the whole text on hover (its title). Returns {table,
   * setRows(rows)} so a view can refilter. */
  function table(parent, columns, rows, opts) {
    opts = opts || {};
    const wrap = el('div', { class: 'tp-table-wrap' }, parent);
    let q = '';
    if (opts.search) {
      const inp = el('input', { type: 'search', class: 'tp-search', placeholder: 'search' }, wrap);
      inp.addEventListener('input', () => { q = inp.value.toLowerCase(); draw(); });
    }
    const t = el('table', { id: opts.id }, wrap);
    const hr = el('tr', {}, el('thead', {}, t));
    const tb = el('tbody', {}, t);
    const note = el('p', { class: 'note' }, wrap);
    let key = opts.sortBy, desc = opts.desc !== false, data = rows, limit = opts.limit || 0;
    const ths = columns.map((c, i) => {
      const th = el('th', { class: c.align === 'l' ? 'l' : 'r', 'data-col': i, 'data-key': c.key, title: c.title }, hr, c.label);
      th.addEventListener('click', () => { desc = key === c.key ? !desc : c.align !== 'l'; key = c.key; draw(); });
      return th;
    });
    /* text columns with long values share ~440 px (opts.textWidth; one
     * alone: 330 px, the stylesheet's td.l; a column's own maxWidth first),
     * so the numeric columns stay on screen */
    function textWidths(list) {
      const long = columns.map(c => c.align === 'l' && list.some(r => typeof r[c.key] === 'string' && r[c.key].length > 40));
      const n = long.filter(Boolean).length;
      const budget = opts.textWidth || 440;
      return long.map((l, i) => columns[i].maxWidth ? (typeof columns[i].maxWidth === 'number' ? columns[i].maxWidth + 'px' : columns[i].maxWidth) :
        l && n > 1 ? Math.max(Math.min(160, budget / n), Math.floor(budget / n)) + 'px' : null);
    }
    function draw() {
      let list = data;
      if (q) list = list.filter(r => columns.some(c => typeof r[c.key] === 'string' && r[c.key].toLowerCase().includes(q)));
      if (key !== undefined) {
        list = list.slice().sort((a, b) => {
          const x = a[key], y = b[key];
          const r = typeof x === 'string' || typeof y === 'string' ? String(x).localeCompare(String(y)) : (x === null || x === undefined ? -Infinity : x) - (y === null || y === undefined ? -Infinity : y);
          return desc ? -r : r;
        });
      }
      ths.forEach((th, i) => th.setAttribute('aria-sort', columns[i].key === key ? (desc ? 'descending' : 'ascending') : 'none'));
      tb.textContent = '';
      const shown = limit ? list.slice(0, limit) : list;
      const widths = textWidths(shown);
      for (const r of shown) {
        const tr = el('tr', opts.onRow ? { class: 'tp-click' } : {}, tb);
        if (opts.onRow) tr.addEventListener('click', () => opts.onRow(r, tr));
        columns.forEach((c, i) => {
          const v = r[c.key];
          el('td', { class: c.align === 'l' ? 'l' : 'r', title: c.align === 'l' ? v : undefined, style: widths[i] ? 'max-width:' + widths[i] : undefined }, tr, c.fmt ? c.fmt(v, r) : v === null || v === undefined ? '-' : typeof v === 'number' ? fmtNum(v) : v);
        });
      }
      note.textContent = shown.length < list.length ? 'Showing ' + shown.length + ' of ' + list.length + ' rows. ' : list.length ? '' : 'No rows.';
      if (shown.length < list.length) {
        const more = el('button', { type: 'button', class: 'tp-more' }, note, 'show ' + Math.min(list.length, limit * 4) + '');
        more.addEventListener('click', () => { limit *= 4; draw(); });
      }
    }
    draw();
    return { table: t, setRows: r => { data = r; draw(); } };
  }

  function card(root, title, id) {
    const c = el('div', { class: 'card', id: id }, root);
    if (title) el('h2', {}, c, title);
    return c;
  }

  /* ---- the page ---------------------------------------------------------------------- */
  function select(key) {
    for (const b of document.querySelectorAll('#tabs button')) b.setAttribute('aria-selected', b.dataset.view === key ? 'true' : 'false');
    for (const s of document.querySelectorAll('main>section.view')) s.hidden = s.dataset.view !== key;
    if (history.replaceState) history.replaceState(null, '', '#' + key);
  }

  function start() {
    const D = JSON.parse(document.getElementById('trainprof-data').textContent);
    const meta = D.meta || {};
    document.getElementById('title').textContent = 'trainprof report: ' + (meta.title || '');
    /* several trace files: each is named (the input is only the first of them) */
    const files = meta.kind === 'traces' && (meta.traces || []).length > 1 && meta.traces[0] === meta.input ? meta.traces : null;
    const input = files ? files.slice(0, 4).join(', ') + (files.length > 4 ? ' and ' + (files.length - 4) + ' more' : '') : meta.input || '';
    document.getElementById('subtitle').textContent = input + (meta.kind ? ' (' + meta.kind + ')' : '');
    const tabs = document.getElementById('tabs'), main = document.getElementById('views');
    const missing = meta.missing || {};
    let first = null;
    views.sort((a, b) => (a.order || 0) - (b.order || 0));
    for (const v of views) {
      const data = D[v.key];
      const b = el('button', { type: 'button', role: 'tab', 'data-view': v.key }, tabs, v.title);
      const sec = el('section', { class: v.wide ? 'view wide' : 'view', id: 'view-' + v.key, 'data-view': v.key }, main);
      b.addEventListener('click', () => select(v.key));
      if (data === null || data === undefined) {
        b.classList.add('missing');
        b.title = 'not in this trace';
        el('p', { class: 'note card missing' }, sec, v.title + ' is not in this input' + (missing[v.key] || v.missing ? ': ' + (missing[v.key] || v.missing) : '.'));
        continue;
      }
      try {
        v.render(sec, data, D);
        if (!first) first = v.key;
      } catch (e) {
        b.classList.add('failed');
        el('div', { class: 'error card' }, sec, 'This view could not be drawn: ' + e + (e && e.stack ? '\n' + e.stack : ''));
        console.error('trainprof view ' + v.key + ':', e);
      }
    }
    if (meta.left_out && meta.left_out.length) {
      const p = el('div', { class: 'note', id: 'left-out' }, main);
      for (const s of meta.left_out) el('div', {}, p, s);
    }
    const want = location.hash.slice(1);
    select(views.some(v => v.key === want) ? want : first || (views[0] && views[0].key));
    document.documentElement.dataset.renderedMs = performance.now().toFixed(0);  /* for the benchmark */
  }

  return { view, el, card, start, midTrunc, shortName, fitName, chartLabels, nameLabeler, fmtNum, fmtDur, durUnit, fmtBytes, bytesUnit, fmtPct, niceTicks, kindTicks, tickFormat, dsSeries, dsRange, table, barChart, lineChart, stackedBars, legend, COLORS, W, H };
})();

/* A rank selector for a page of several ranks (issue 31: their steps are
 * never merged; a view that shows steps shows the rank chosen): "Rank:"
 * and a <select> of ranks (their numbers) in host; onChange(index) now and
 * on each choice. Returns the select. */
TP.rankPicker = function (host, ranks, onChange, id) {
  const p = TP.el('p', { class: 'rank-pick' }, host, 'Rank: ');
  const sel = TP.el('select', Object.assign({ class: 'tp-rank', title: 'the rank whose steps are shown' }, id ? { id: id } : {}), p);
  ranks.forEach((r, i) => TP.el('option', { value: String(i) }, sel, String(r)));
  sel.addEventListener('change', () => onChange(+sel.value));
  onChange(0);
  return sel;
};
