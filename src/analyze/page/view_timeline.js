/* view_timeline.js - the Timeline view: the events the page carries
 * (D.timeline, written by view_timeline_json.c), drawn on a canvas: one row
 * per thread and per GPU stream (nested spans in lanes), counter rows,
 * launch-to-kernel flows, a time axis with rounded ticks.
 * Zoom: wheel (at the pointer), W/S, +/-; pan: drag, A/D, arrows; 0: all.
 * Hover shows an event, click pins it (name, duration, args, flow). */
(function () {
  'use strict';
  var LABEL_W = 230, LANE = 16, AXIS_H = 28, STEP_H = 16, COUNTER_H = 42, GAP = 4, MIN_PX = 0.5, GROUP_H = 18, TRACK_H = 30;
  var KIND_COLOR = ['#4e79a7', '#9c755f', '#bab0ac', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1'];

  function hashColor(s) {
    var h = 0;
    for (var i = 0; i < s.length && i < 64; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    return 'hsl(' + (((h % 360) + 360) % 360) + ',45%,62%)';
  }

  /* Events by row, each row's spans laid out in lanes (a span nests in the
   * enclosing one on the lane above). */
  function layout(T) {
    var ev = T.ev, n = ev.length / 7, rows = T.rows.map(function (r, i) {
      return {info: r, index: i, ev: [], lane: [], lanes: 1, y: 0, h: 0};
    });
    for (var i = 0; i < n; i++) {
      var r = rows[ev[7 * i]];
      if (r) r.ev.push(i);
    }
    rows.forEach(function (r) {
      r.ev.sort(function (a, b) { return ev[7 * a + 1] - ev[7 * b + 1] || ev[7 * b + 2] - ev[7 * a + 2]; });
      var stack = [];
      r.ev.forEach(function (e) {
        var s = ev[7 * e + 1], end = s + ev[7 * e + 2];
        while (stack.length && stack[stack.length - 1] <= s && !(stack[stack.length - 1] === s && ev[7 * e + 2] === 0)) stack.pop();
        while (stack.length && stack[stack.length - 1] < end) stack.pop();
        r.lane.push(stack.length);
        if (stack.length + 1 > r.lanes) r.lanes = Math.min(stack.length + 1, 32);
        stack.push(end);
      });
      r.maxDur = 0;
      r.ev.forEach(function (e) { if (ev[7 * e + 2] > r.maxDur) r.maxDur = ev[7 * e + 2]; });
    });
    /* GPU rows first (a device's streams together), then each process's threads */
    rows.sort(function (a, b) {
      return a.info.file - b.info.file || (b.info.kind === 'gpu') - (a.info.kind === 'gpu') ||
        a.info.pid - b.info.pid || a.info.tid - b.info.tid;
    });
    /* groups: one per device and per process, in that order; the rows that
     * carry nothing a person reads (info.folded, see view_timeline_json.c)
     * in one group at the bottom, closed */
    var groups = [], byKey = {}, more = {key: 'more', rows: [], tracks: [], open: false};
    rows.forEach(function (r) {
      if (r.info.folded) { more.rows.push(r); return; }
      var key = r.info.file + '|' + r.info.kind + '|' + r.info.pid;
      if (!byKey[key]) groups.push(byKey[key] = {key: key, title: r.info.group || r.info.name, rows: [], tracks: [], open: true});
      byKey[key].rows.push(r);
    });
    /* a device's tracks: one segment per window (the span drawn, or each chosen step) */
    (T.gpu_tracks || []).forEach(function (g) {
      var grp = byKey[g.file + '|gpu|' + g.pid];
      if (!grp) return;
      if (!grp.tracks.length) {
        grp.tracks.push({name: 'utilization', what: 'util', segs: [], h: TRACK_H, device: g.name});
        grp.tracks.push({name: 'est. SM efficiency', what: 'sm', segs: [], h: TRACK_H, device: g.name});
      }
      grp.tracks[0].segs.push({g: g, v: g.util});
      if (g.sm) grp.tracks[1].segs.push({g: g, v: g.sm});
    });
    groups.forEach(function (grp) { grp.tracks = grp.tracks.filter(function (t) { return t.segs.length; }); });
    if (more.rows.length) {
      more.title = more.rows.length + ' more row' + (more.rows.length > 1 ? 's' : '') +
        ' (nothing to read: instants only, bookkeeping, or under 0.1 % busy)';
      groups.push(more);
    }
    /* a series at zero throughout (a CPU trace's "memory reserved") is
     * named in a note, not drawn as a flat row */
    var counters = [], zero = [];
    (T.counters || []).forEach(function (c) {
      var lo = Infinity, hi = -Infinity;
      c.v.forEach(function (v) { if (v < lo) lo = v; if (v > hi) hi = v; });
      if (lo === 0 && hi === 0) { zero.push(c.name); return; }
      counters.push({info: {name: c.name, kind: 'counter'}, c: c, lo: Math.min(lo, 0), hi: hi, h: COUNTER_H});
    });
    var lane = new Int32Array(n), byIndex = [];
    rows.forEach(function (r) {
      byIndex[r.index] = r;
      for (var k = 0; k < r.ev.length; k++) lane[r.ev[k]] = r.lane[k];
    });
    var L = {all: rows, groups: groups, counters: counters, zero: zero, lane: lane, byIndex: byIndex};
    place(L);
    return L;
  }

  /* Positions of what is shown: each group's header, then (open) its
   * tracks and rows; the counters last. */
  function place(L) {
    var y = AXIS_H + STEP_H;
    L.rows = []; L.tracks = []; L.headers = [];
    L.all.forEach(function (r) { r.shown = false; });
    L.groups.forEach(function (g) {
      g.y = y; g.h = GROUP_H; y += GROUP_H;
      L.headers.push(g);
      if (!g.open) return;
      g.tracks.forEach(function (t) { t.y = y; y += t.h; L.tracks.push(t); });
      g.rows.forEach(function (r) { r.y = y; r.h = r.lanes * LANE + GAP; y += r.h; r.shown = true; L.rows.push(r); });
    });
    L.counters.forEach(function (c) { c.y = y; y += c.h; });
    L.height = y + 4;
  }

  /* The axis fits the spans: an instant far outside them (Kineto's "Record
   * Window End") does not stretch it; instants alone when there is no span. */
  function extent(T) {
    var ev = T.ev, lo = Infinity, hi = -Infinity;
    /* nor does a folded row's span (Kineto's "PyTorch Profiler (0)" runs far past the events) */
    var folded = T.rows.map(function (r) { return !!r.folded; });
    for (var pass = 0; pass < 3 && !(hi > lo); pass++)
      for (var i = 0; i < ev.length; i += 7) {
        if (pass < 2 && !ev[i + 2]) continue;
        if (pass === 0 && folded[ev[i]]) continue;
        if (ev[i + 1] < lo) lo = ev[i + 1];
        if (ev[i + 1] + ev[i + 2] > hi) hi = ev[i + 1] + ev[i + 2];
      }
    (T.counters || []).forEach(function (c) {
      c.t.forEach(function (t) { if (t < lo) lo = t; if (t > hi) hi = t; });
    });
    if (!(hi > lo)) { lo = 0; hi = 1000; }
    return [lo, hi];
  }

  /* event index -> the forward/backward ops it is bound to */
  function fwdbwdMap(T) {
    var m = {}, p = T.fwdbwd || [];
    for (var i = 0; i + 1 < p.length; i += 2) {
      (m[p[i]] = m[p[i]] || []).push({other: p[i + 1], fwd: true});
      (m[p[i + 1]] = m[p[i + 1]] || []).push({other: p[i], fwd: false});
    }
    return m;
  }

  function render(section, T) {
    var root = TP.card(section, 'Timeline', 'tl-card');
    var head = TP.el('div', {'class': 'tl-head'}, root);
    TP.el('p', {'class': 'note tl-note'}, head, T.note);
    /* which rule the steps follow (the plugin's on a GPU trace, as the Overview says) */
    if (T.step_note) TP.el('p', {'class': 'note tl-rule'}, head, T.step_note);
    var files = (T.files || []).filter(function (f) { return f; });
    if (files.length) {
      var p = TP.el('p', {'class': 'note tl-open'}, head, 'The whole trace' + (files.length > 1 ? 's' : '') + ': ');
      files.forEach(function (f, i) { TP.el('code', null, p, f + (i + 1 < files.length ? ', ' : '')); });
      /* names, not links: the page refers to nothing on the network */
      p.appendChild(document.createTextNode(' \u2014 open it in '));
      TP.el('b', null, p, 'ui.perfetto.dev');
      p.appendChild(document.createTextNode(' or '));
      TP.el('b', null, p, 'speedscope.app');
      p.appendChild(document.createTextNode(' (drag the file onto the page; nothing is uploaded).'));
    }
    var L = layout(T), full = extent(T), view = {lo: full[0], hi: full[1]};
    if (L.zero.length)
      TP.el('p', {'class': 'note tl-zero'}, head, 'Zero throughout, not drawn: ' +
        L.zero.filter(function (n, i) { return L.zero.indexOf(n) === i; }).join(', ') + '.');
    TP.el('p', {'class': 'note tl-keys'}, head, 'wheel / W S: zoom \u00b7 drag / A D: pan \u00b7 0: all \u00b7 click: details \u00b7 click a group to fold it');
    var bar = TP.el('div', {'class': 'tl-bar'}, root);
    var pad = (full[1] - full[0]) * 0.01;
    view.lo -= pad; view.hi += pad;
    var home = {lo: view.lo, hi: view.hi};
    function button(label, fn) {
      var b = TP.el('button', {type: 'button'}, bar, label);
      b.addEventListener('click', fn);
      return b;
    }
    button('Whole', function () { setView(home.lo, home.hi); });
    /* several ranks (issue 31): their steps are not one series; the step
     * band and the buttons show the rank chosen, each label naming it */
    var ranks = T.ranks && T.ranks.length > 1 ? T.ranks : null, rank = 0, fileRank = {}, ready = false;
    (ranks || []).forEach(function (r, i) { r.files.forEach(function (f) { fileRank[f] = i; }); });
    function rankOf(file) { return ranks ? ranks[fileRank[file]].name + ' ' : ''; }
    function shownSteps() {
      return (T.steps || []).filter(function (s) { return !ranks || fileRank[s.file] === rank; });
    }
    var stepBar = TP.el('span', {'class': 'tl-steps'}, bar);
    function setRank(i) {
      rank = i;
      stepBar.textContent = '';
      shownSteps().filter(function (s) { return s.pick; }).forEach(function (s) {
        var b = TP.el('button', {type: 'button'}, stepBar, (ranks ? rankOf(s.file) + '\u00b7 ' : '') + s.pick + ' step #' + s.num +
          ' (' + TP.fmtDur(s.dur) + ')');
        b.addEventListener('click', function () {
          var m = s.dur * 0.04;
          setView(s.start - m, s.start + s.dur + m);
        });
      });
      if (ready) draw();
    }
    setRank(0);
    var fb = fwdbwdMap(T), showFb = false;
    if (T.fwdbwd && T.fwdbwd.length) {
      var lab = TP.el('label', {'class': 'note tl-fwdbwd', style: 'margin:0 12px'}, bar);
      var box = TP.el('input', {type: 'checkbox'}, lab);
      lab.appendChild(document.createTextNode(' forward \u2192 backward (' + T.fwdbwd.length / 2 + ')'));
      box.addEventListener('change', function () { showFb = box.checked; draw(); });
    }
    var wrap = TP.el('div', {'class': 'tl-wrap', tabindex: '0'}, root);
    wrap.style.cssText = 'position:relative;overflow-y:auto;max-height:72vh;border:1px solid #ddd;outline:none';
    var canvas = TP.el('canvas', {'class': 'tl-canvas'}, wrap);
    var tip = TP.el('div', {'class': 'tl-tip'}, wrap);
    tip.style.cssText = 'position:absolute;display:none;pointer-events:none;background:#fff;border:1px solid #999;' +
      'padding:4px 6px;font:12px sans-serif;max-width:480px;white-space:pre-wrap;box-shadow:0 1px 4px rgba(0,0,0,.2)';
    var detail = TP.el('div', {'class': 'tl-detail'}, root);
    var ctx = canvas.getContext('2d'), width = 0, selected = -1, hover = -1, dpr = window.devicePixelRatio || 1;
    var byCorr = {};
    for (var i = 0; i < T.ev.length / 7; i++) {
      var c = T.ev[7 * i + 5];
      if (c) (byCorr[c] = byCorr[c] || []).push(i);
    }

    function x(t) { return LABEL_W + (t - view.lo) / (view.hi - view.lo) * (width - LABEL_W); }
    function tAt(px) { return view.lo + (px - LABEL_W) / (width - LABEL_W) * (view.hi - view.lo); }

    function size() {
      width = Math.max(400, wrap.clientWidth || root.clientWidth || 900);
      canvas.width = width * dpr;
      canvas.height = L.height * dpr;
      canvas.style.width = width + 'px';
      canvas.style.height = L.height + 'px';
    }

    function drawAxis() {
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, width, AXIS_H + STEP_H);
      ctx.strokeStyle = '#eee';
      ctx.fillStyle = '#333';
      ctx.font = '11px sans-serif';
      ctx.textBaseline = 'middle';
      var ticks = TP.niceTicks(view.lo, view.hi, Math.max(2, Math.floor((width - LABEL_W) / 110)));
      var step = ticks.length > 1 ? ticks[1] - ticks[0] : 0, tf = TP.tickFormat(ticks, 'ns');
      ticks.forEach(function (t) {
        var px = x(t);
        if (px < LABEL_W || px > width) return;
        ctx.beginPath(); ctx.moveTo(px + 0.5, AXIS_H - 6); ctx.lineTo(px + 0.5, L.height); ctx.stroke();
        if (px > LABEL_W + 4) ctx.fillText(tf(t), px + 3, AXIS_H / 2);
      });
      ctx.fillText('time from trace start' + (step ? ' (ticks ' + TP.fmtDur(step) + ')' : ''), 6, AXIS_H / 2);
      shownSteps().forEach(function (s) {
        var a = Math.max(x(s.start), LABEL_W), b = Math.min(x(s.start + s.dur), width);
        if (b <= a) return;
        ctx.fillStyle = s.pick === 'slowest' ? '#e15759' : s.pick === 'fastest' ? '#59a14f' : s.pick ? '#f28e2b' : '#c9d4e3';
        ctx.fillRect(a, AXIS_H + 1, Math.max(1, b - a - 1), STEP_H - 3);
        if (b - a > 60) {
          ctx.fillStyle = '#000';
          ctx.save();
          ctx.beginPath(); ctx.rect(a, AXIS_H, b - a - 1, STEP_H); ctx.clip();
          ctx.fillText(stepLabel(s), a + 3, AXIS_H + STEP_H / 2);
          ctx.restore();
        }
      });
    }

    /* a step in the band: "rank 1 #552 slowest 630.6 ms" (the rank only with several) */
    function stepLabel(s) {
      return rankOf(s.file) + '#' + s.num + (s.pick ? ' ' + s.pick : '') + ' ' + TP.fmtDur(s.dur);
    }

    function drawRow(r) {
      var ev = T.ev, lo = view.lo, hi = view.hi, lastX = [];
      ctx.fillStyle = r.index % 2 ? '#fafafa' : '#fff';
      ctx.fillRect(LABEL_W, r.y, width - LABEL_W, r.h);
      ctx.font = '11px sans-serif';
      for (var k = 0; k < r.ev.length; k++) {
        var e = r.ev[k], s = ev[7 * e + 1], d = ev[7 * e + 2];
        if (s > hi || s + d < lo) continue;
        var a = x(s), b = x(s + d), lane = r.lane[k];
        if (lane >= 32) continue;
        var w = b - a;
        if (w < MIN_PX) {
          if (lastX[lane] === Math.round(a)) continue; /* many tiny spans in one pixel: one mark */
          lastX[lane] = Math.round(a);
          w = 1;
        }
        a = Math.max(a, LABEL_W - 1);
        w = Math.min(b, width + 1) - a;
        if (w < 1) w = 1;
        var y = r.y + lane * LANE + 1, name = T.names[ev[7 * e + 3]];
        ctx.fillStyle = ev[7 * e + 4] === 2 ? '#c9d4e3' : d === 0 ? '#333' : (r.info.kind === 'gpu' ? KIND_COLOR[ev[7 * e + 4]] || '#888' : hashColor(name));
        ctx.fillRect(a, y, w, LANE - 2);
        if (e === selected || e === hover) {
          ctx.strokeStyle = '#000'; ctx.lineWidth = 2; ctx.strokeRect(a, y, w, LANE - 2); ctx.lineWidth = 1;
        }
        if (w > 40) {
          ctx.save();
          ctx.beginPath(); ctx.rect(a, y, w, LANE - 2); ctx.clip();
          ctx.fillStyle = '#000';
          ctx.fillText(name, a + 2, y + LANE / 2);
          ctx.restore();
        }
      }
    }

    function drawCounter(c) {
      var t = c.c.t, v = c.c.v, span = c.hi - c.lo || 1;
      ctx.fillStyle = '#f4f8fb';
      ctx.fillRect(LABEL_W, c.y, width - LABEL_W, c.h - 2);
      ctx.strokeStyle = '#4e79a7';
      ctx.beginPath();
      var started = false, prevY = 0;
      for (var i = 0; i < t.length; i++) {
        var px = x(t[i]), py = c.y + c.h - 4 - (v[i] - c.lo) / span * (c.h - 8);
        if (!started) { ctx.moveTo(Math.max(px, LABEL_W), py); started = true; } else { ctx.lineTo(Math.max(px, LABEL_W), prevY); ctx.lineTo(Math.max(px, LABEL_W), py); }
        prevY = py;
      }
      if (started) ctx.lineTo(width, prevY);
      ctx.stroke();
    }

    function drawLabels() {
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, AXIS_H + STEP_H, LABEL_W, L.height);
      ctx.fillStyle = '#222';
      ctx.font = '11px sans-serif';
      L.rows.forEach(function (r) {
        ctx.fillText(clip(r.info.label || r.info.name, LABEL_W - 18), 14, r.y + LANE / 2);
        ctx.strokeStyle = '#e5e5e5';
        ctx.beginPath(); ctx.moveTo(0, r.y + r.h - 0.5); ctx.lineTo(width, r.y + r.h - 0.5); ctx.stroke();
      });
      L.tracks.forEach(function (t) {
        ctx.fillStyle = '#222';
        ctx.fillText(clip(t.name, LABEL_W - 10), 14, t.y + 9);
        ctx.fillStyle = '#666';
        ctx.fillText('mean ' + TP.fmtPct(100 * mean(t)), 14, t.y + 22);
      });
      ctx.fillStyle = '#222';
      L.counters.forEach(function (c) {
        ctx.fillText(clip(c.info.name, LABEL_W - 10), 4, c.y + 10);
        ctx.fillStyle = '#666';
        ctx.fillText('max ' + fmtCounter(c.info.name, c.hi), 4, c.y + 26);
        ctx.fillStyle = '#222';
      });
    }

    function drawHeaders() {
      ctx.font = 'bold 11px sans-serif';
      L.headers.forEach(function (g) {
        ctx.fillStyle = g.key === 'more' ? '#f3f3f3' : '#e8eef6';
        ctx.fillRect(0, g.y, width, GROUP_H - 1);
        ctx.fillStyle = '#222';
        var n = g.rows.length, head = (g.open ? '\u25be ' : '\u25b8 ') + g.title;
        if (g.key !== 'more') head += ' \u00b7 ' + n + ' row' + (n > 1 ? 's' : '');
        ctx.fillText(clip(head, width - 12), 4, g.y + GROUP_H / 2);
      });
      ctx.font = '11px sans-serif';
    }

    /* The mean of a track over its windows (buckets weighted by width). */
    function mean(t) {
      var sum = 0, span = 0;
      t.segs.forEach(function (sg) {
        var g = sg.g, n = sg.v.length;
        for (var i = 0; i < n; i++) sum += sg.v[i] * ((i === n - 1 ? g.end : g.start + (i + 1) * g.bucket) - (g.start + i * g.bucket));
        span += g.end - g.start;
      });
      return span > 0 ? sum / span : 0;
    }

    /* A track: one bar per bucket, full height = 100 %; nothing where no window is. */
    function drawTrack(t) {
      ctx.fillStyle = '#f7f9fc';
      ctx.fillRect(LABEL_W, t.y, width - LABEL_W, t.h - 2);
      ctx.fillStyle = t.what === 'util' ? '#59a14f' : '#4e79a7';
      t.segs.forEach(function (sg) {
        var g = sg.g, n = sg.v.length;
        for (var i = 0; i < n; i++) {
          var a = x(g.start + i * g.bucket), b = x(i === n - 1 ? g.end : g.start + (i + 1) * g.bucket);
          if (b < LABEL_W || a > width) continue;
          a = Math.max(a, LABEL_W); b = Math.min(b, width);
          var hgt = Math.max(0, Math.min(1, sg.v[i])) * (t.h - 6);
          ctx.fillRect(a, t.y + t.h - 3 - hgt, Math.max(1, b - a - 0.5), hgt);
        }
      });
    }

    function clip(s, w) {
      if (ctx.measureText(s).width <= w) return s;
      while (s.length > 3 && ctx.measureText(s + '\u2026').width > w) s = s.slice(0, -1);
      return s + '\u2026';
    }

    /* a counter in its own unit: a percentage is no byte count */
    function fmtCounter(name, v) {
      return /%|percent|util/i.test(name) ? TP.fmtPct(v) : /memory|bytes/i.test(name) ? TP.fmtBytes(v) : TP.fmtNum(v);
    }

    /* where event e is drawn (null: its row is folded); O(1) a call: the
     * forward-backward arrows ask for thousands */
    function eventBox(e) {
      var r = L.byIndex[T.ev[7 * e]];
      if (!r || !r.shown) return null;
      var s = T.ev[7 * e + 1], d = T.ev[7 * e + 2];
      return {x0: x(s), x1: Math.max(x(s + d), x(s) + 1), y: r.y + L.lane[e] * LANE + 1};
    }

    function drawFlows(e) {
      var c = e >= 0 ? T.ev[7 * e + 5] : 0;
      if (!c || !byCorr[c]) return;
      var group = byCorr[c].slice().sort(function (a, b) { return T.ev[7 * a + 1] - T.ev[7 * b + 1]; });
      ctx.strokeStyle = '#d62728';
      ctx.fillStyle = '#d62728';
      ctx.lineWidth = 1.5;
      for (var i = 0; i + 1 < group.length; i++) {
        var a = eventBox(group[i]), b = eventBox(group[i + 1]);
        if (!a || !b) continue;
        var ax = Math.max(a.x0, LABEL_W), ay = a.y + LANE - 2, bx = Math.max(b.x0, LABEL_W), by = b.y;
        ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(bx, by); ctx.stroke();
        ctx.beginPath(); ctx.moveTo(bx, by); ctx.lineTo(bx - 4, by - 7); ctx.lineTo(bx + 4, by - 7); ctx.fill();
      }
      ctx.lineWidth = 1;
    }

    /* forward -> backward arrows: all of them with the toggle on, else those
     * of the pinned or hovered op */
    function drawFwdBwd() {
      var pairs = T.fwdbwd || [];
      ctx.strokeStyle = '#9467bd';
      ctx.fillStyle = '#9467bd';
      ctx.lineWidth = 1.2;
      for (var i = 0; i + 1 < pairs.length; i += 2) {
        var f = pairs[i], b = pairs[i + 1];
        if (!showFb && f !== selected && b !== selected && f !== hover && b !== hover) continue;
        var A = eventBox(f), B = eventBox(b);
        if (!A || !B || (A.x0 > width && B.x0 > width) || (A.x1 < LABEL_W && B.x1 < LABEL_W)) continue;
        var ax = Math.max(A.x0, LABEL_W), ay = A.y + (LANE - 2) / 2, bx = Math.max(B.x0, LABEL_W), by = B.y + (LANE - 2) / 2;
        ctx.beginPath(); ctx.moveTo(ax, ay); ctx.bezierCurveTo(ax + 30, ay, bx - 30, by, bx, by); ctx.stroke();
        ctx.beginPath(); ctx.moveTo(bx, by); ctx.lineTo(bx - 7, by - 4); ctx.lineTo(bx - 7, by + 4); ctx.fill();
      }
      ctx.lineWidth = 1;
    }

    function draw() {
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, width, L.height);
      drawAxis();
      L.rows.forEach(drawRow);
      L.tracks.forEach(drawTrack);
      L.counters.forEach(drawCounter);
      drawFlows(selected);
      drawFwdBwd();
      drawLabels();
      drawHeaders();
      root.setAttribute('data-view-lo', String(Math.round(view.lo)));
      root.setAttribute('data-view-hi', String(Math.round(view.hi)));
      root.setAttribute('data-rows', JSON.stringify(L.rows.map(function (r) { return r.info.name; })));
      root.setAttribute('data-groups', JSON.stringify(L.groups.map(function (g) { return [g.title, g.rows.length, g.open]; })));
      root.setAttribute('data-tracks', JSON.stringify(L.tracks.map(function (t) { return [t.device + ' ' + t.name, mean(t)]; })));
      root.setAttribute('data-fwdbwd', String(showFb));
      root.setAttribute('data-rank', ranks ? ranks[rank].name : '');
      root.setAttribute('data-steps', JSON.stringify(shownSteps().map(stepLabel)));
      root.setAttribute('data-counters', JSON.stringify(L.counters.map(function (c) { return [c.info.name, fmtCounter(c.info.name, c.hi)]; })));
    }

    function setView(lo, hi) {
      var minSpan = 100; /* 100 ns across the whole width at most zoomed */
      if (hi - lo < minSpan) { var m = (lo + hi) / 2; lo = m - minSpan / 2; hi = m + minSpan / 2; }
      view.lo = lo; view.hi = hi;
      draw();
    }

    function zoom(f, at) {
      var t = at === undefined ? (view.lo + view.hi) / 2 : at;
      setView(t - (t - view.lo) * f, t + (view.hi - t) * f);
    }

    function pan(frac) {
      var d = (view.hi - view.lo) * frac;
      setView(view.lo + d, view.hi + d);
    }

    /* A track's bucket under the pointer: its value and its time range. */
    function trackTip(px, py) {
      if (px < LABEL_W) return '';
      var at = tAt(px);
      for (var i = 0; i < L.tracks.length; i++) {
        var t = L.tracks[i];
        if (py < t.y || py >= t.y + t.h) continue;
        for (var k = 0; k < t.segs.length; k++) {
          var g = t.segs[k].g, n = t.segs[k].v.length;
          if (at < g.start || at >= g.end) continue;
          var b = Math.min(n - 1, Math.floor((at - g.start) / g.bucket));
          var a = g.start + b * g.bucket, z = b === n - 1 ? g.end : a + g.bucket;
          return t.device + ' ' + t.name + ': ' + TP.fmtPct(100 * t.segs[k].v[b]) + '\n' + TP.fmtDur(a) + ' to ' +
            TP.fmtDur(z) + (g.step !== undefined ? ' of ' + rankOf(g.file) + 'step #' + g.step : '') + ' (buckets of ' + TP.fmtDur(g.bucket) +
            ', as the TensorBoard plugin)';
        }
        return '';
      }
      return '';
    }

    function header(py) {
      for (var i = 0; i < L.headers.length; i++)
        if (py >= L.headers[i].y && py < L.headers[i].y + GROUP_H) return L.headers[i];
      return null;
    }

    function hit(px, py) {
      if (px < LABEL_W) return -1;
      for (var i = 0; i < L.rows.length; i++) {
        var r = L.rows[i];
        if (py < r.y || py >= r.y + r.h) continue;
        var lane = Math.floor((py - r.y) / LANE), t = tAt(px), slack = 3 * (view.hi - view.lo) / (width - LABEL_W), best = -1;
        for (var k = 0; k < r.ev.length; k++) {
          var e = r.ev[k], s = T.ev[7 * e + 1], d = T.ev[7 * e + 2];
          if (r.lane[k] !== lane || s > t + slack) continue;
          if (s + d + slack >= t && (best < 0 || d < T.ev[7 * best + 2])) best = e;
        }
        return best;
      }
      return -1;
    }

    function describe(e) {
      var ev = T.ev, kind = T.kinds[ev[7 * e + 4]] || '', row = T.rows[ev[7 * e]];
      var lines = [T.names[ev[7 * e + 3]], (ev[7 * e + 2] ? TP.fmtDur(ev[7 * e + 2]) : 'instant') + ' \u00b7 ' + kind +
        ' \u00b7 at ' + TP.fmtDur(ev[7 * e + 1]) + (row ? ' \u00b7 ' + row.name : '')];
      (fb[e] || []).forEach(function (p) {
        lines.push(p.fwd ? 'forward \u2192 backward: ' + T.names[ev[7 * p.other + 3]]
                         : 'backward of forward op ' + T.names[ev[7 * p.other + 3]] + ' (forward \u2192 backward)');
      });
      if (ev[7 * e + 5]) lines.push('correlation ' + ev[7 * e + 5] + ' (' + ((byCorr[ev[7 * e + 5]] || []).length - 1) + ' linked)');
      var a = ev[7 * e + 6];
      if (a >= 0) {
        var text = T.args[a];
        try { text = JSON.stringify(JSON.parse(text), null, 1); } catch (err) { /* shown as carried */ }
        lines.push('args: ' + text);
      }
      return lines.join('\n');
    }

    function showDetail(e) {
      detail.textContent = '';
      if (e < 0) return;
      TP.el('h4', null, detail, T.names[T.ev[7 * e + 3]]);
      TP.el('pre', {style: 'white-space:pre-wrap;word-break:break-all;font-size:12px'}, detail, describe(e));
    }

    var drag = null;
    canvas.addEventListener('wheel', function (ev) {
      if (ev.offsetX < LABEL_W) return;
      ev.preventDefault();
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, tAt(ev.offsetX));
    }, {passive: false});
    canvas.addEventListener('mousedown', function (ev) { drag = {x: ev.clientX, lo: view.lo, hi: view.hi, moved: false}; });
    window.addEventListener('mouseup', function (ev) {
      var g = drag && !drag.moved && ev.target === canvas ? header(ev.offsetY) : null;
      if (g) {
        g.open = !g.open;
        place(L);
        size();
        draw();
      } else if (drag && !drag.moved && ev.target === canvas) {
        selected = hit(ev.offsetX, ev.offsetY);
        showDetail(selected);
        draw();
      }
      drag = null;
    });
    canvas.addEventListener('mousemove', function (ev) {
      if (drag) {
        var dx = ev.clientX - drag.x;
        if (Math.abs(dx) > 2) drag.moved = true;
        if (drag.moved) {
          var dt = dx / (width - LABEL_W) * (drag.hi - drag.lo);
          setView(drag.lo - dt, drag.hi - dt);
        }
        return;
      }
      canvas.style.cursor = header(ev.offsetY) ? 'pointer' : '';
      var e = hit(ev.offsetX, ev.offsetY), tt = e < 0 ? trackTip(ev.offsetX, ev.offsetY) : '';
      if (e !== hover) { hover = e; draw(); }
      if (e < 0 && !tt) { tip.style.display = 'none'; return; }
      tip.textContent = e >= 0 ? describe(e) : tt;
      tip.style.display = 'block';
      tip.style.left = Math.min(ev.offsetX + 12, width - 300) + 'px';
      tip.style.top = (ev.offsetY + 14) + 'px';
    });
    canvas.addEventListener('mouseleave', function () { tip.style.display = 'none'; hover = -1; draw(); });
    wrap.addEventListener('keydown', function (ev) {
      var k = ev.key.toLowerCase();
      if (k === 'w' || k === '+' || k === '=') zoom(0.8);
      else if (k === 's' || k === '-') zoom(1.25);
      else if (k === 'a' || k === 'arrowleft') pan(-0.15);
      else if (k === 'd' || k === 'arrowright') pan(0.15);
      else if (k === '0') setView(home.lo, home.hi);
      else return;
      ev.preventDefault();
    });
    root._tl = { /* for tests: where event i is drawn, in client pixels */
      box: function (e) {
        var b = eventBox(e), r = canvas.getBoundingClientRect();
        return b && {x: r.left + (b.x0 + b.x1) / 2, y: r.top + b.y + LANE / 2 - 1};
      },
      setView: setView,
      view: view,
      track: function (k, b) { /* the middle of track k's bucket b (its first window), in client pixels */
        var t = L.tracks[k], r = canvas.getBoundingClientRect();
        if (!t) return null;
        var g = t.segs[0].g, a = g.start + b * g.bucket, z = b === t.segs[0].v.length - 1 ? g.end : a + g.bucket;
        return {x: r.left + (x(a) + x(z)) / 2, y: r.top + t.y + t.h / 2};
      },
      header: function (title) { /* where group `title`'s header is drawn, in client pixels */
        var r = canvas.getBoundingClientRect();
        for (var i = 0; i < L.headers.length; i++)
          if (L.headers[i].title === title) return {x: r.left + 60, y: r.top + L.headers[i].y + GROUP_H / 2};
        return null;
      }
    };
    size();
    draw();
    ready = true;
    if (ranks) TP.rankPicker(head, ranks.map(function (r) { return r.rank !== null ? r.rank : r.name; }), setRank, 'tl-rank');
    var lastW = width;
    if (window.ResizeObserver) /* drawn while its tab is hidden: redraw when shown or resized */
      new ResizeObserver(function () { if (wrap.clientWidth && wrap.clientWidth !== lastW) { size(); lastW = width; draw(); } }).observe(wrap);
  }

  TP.view({
    key: 'timeline', title: 'Timeline', order: 40,
    render: function (root, T) {
      if (!T.ev || !T.rows.length && !(T.counters || []).length) {
        TP.el('p', null, root, T.note || 'No events to draw.');
        return;
      }
      render(root, T);
    }
  });
})();
