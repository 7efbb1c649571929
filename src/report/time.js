// The report's time view (see src/report/time.rs for its data): each thread's activity over the
// run, its stalls marked, and the table and flame graph of the stretch dragged across with the
// mouse (the whole run until then). Called by page.js with what it shares.
function rprofileTimeView(api) {
  "use strict";
  const { D, $, esc, link, stdName, Grid, fit } = api;
  const T = D.time, N = T.n, W = T.width, TOTAL = N * W;
  const ST = T.stacks, C = T.cells;
  // Where each stack's functions and each bin's cells start.
  const stackAt = new Int32Array(ST.n.length + 1), cellAt = new Int32Array(N + 1);
  ST.n.forEach((n, i) => { stackAt[i + 1] = stackAt[i] + n; });
  C.n.forEach((n, i) => { cellAt[i + 1] = cellAt[i] + n; });
  const hasCpu = T.lanes.some((l) => l.cpu.some((x) => x > 0));
  // Wall mode counts every read with a stack: its idle reads are those in no Python code.
  const hasIdle = T.lanes.some((l) => l.idle.some((x) => x > 0));
  // What a counted sample means in this mode, and the colours of the lanes.
  const KINDS = T.mode === "traced"
    ? [["counted", "in a profiled call", "#5b8fd6"], ["idle", "outside them", "#dcdce2"]]
    : T.mode === "gil"
    ? (hasCpu ? [["cpu", "holding the GIL, on a CPU", "#6a3d9a"], ["counted", "holding the GIL, off a CPU", "#b48ad8"]]
      : [["counted", "holding the GIL", "#b48ad8"]]).concat([["idle", "without the GIL", "#dcdce2"]])
    : T.mode === "cpu"
      ? [["cpu", "running (on a CPU)", "#2e7d32"], ["idle", "off a CPU", "#dcdce2"]]
      : (hasCpu
        ? [["cpu", "running (on a CPU)", "#2e7d32"], ["counted", "off a CPU (waiting, sleeping)", "#f0b35b"]]
        : [["counted", "sampled (CPU states not read)", "#5b8fd6"]]).concat(hasIdle ? [["idle", "in no Python code", "#dcdce2"]] : []);
  const DROPPED = "#d62728", SPLIT = KINDS.some((k) => k[0] === "cpu");
  const fmt = (s) => s.toFixed(3);
  const ms = (s) => { const m = s * 1e3; return m >= 10 ? m.toFixed(0) : m >= 0.1 ? m.toFixed(1) : m.toPrecision(2); };
  // A traced timeline's weights are times (timer units), a sampling run's samples.
  const TRACED = T.mode === "traced";
  const amount = (w) => (TRACED ? (w * T.interval).toFixed(6) + " s" : w.toLocaleString("en-US") + " samples");
  let sel = null, built = false, grid = null, zoom = null, agg = null;

  function build() {
    built = true;
    $("#time-note").innerHTML = "Each thread's " + (TRACED ? "calls" : "samples") + " over the run (" + fmt(T.origin) + "&ndash;" + fmt(T.origin + TOTAL) +
      " s, " + N + " columns of " + ms(W) + " ms): " +
      KINDS.map((k) => '<span class="key" style="background:' + k[2] + '"></span> ' + k[1]).join(", ") +
      (TRACED ? "" : ', <span class="key" style="background:' + DROPPED + '"></span> dropped') +
      (D.stalls ? ', <span class="key stall-key"></span> a stall' : "") +
      ". <b>Drag across the lanes</b> to see the table and flame graph of that stretch.";
    const host = $("#time-lanes");
    host.innerHTML = '<div class="time-names"></div><div class="time-plot"><div id="time-sel" hidden></div></div>';
    const names = host.firstChild, plot = host.lastChild;
    for (const lane of T.lanes) {
      const name = document.createElement("div");
      name.className = "time-name";
      name.textContent = lane.name;
      name.title = lane.name;
      names.appendChild(name);
      const row = document.createElement("div");
      row.className = "time-lane";
      row.dataset.thread = lane.thread;
      row.appendChild(document.createElement("canvas"));
      plot.insertBefore(row, $("#time-sel"));
    }
    const axis = document.createElement("div");
    axis.className = "time-axis";
    plot.appendChild(axis);
    names.appendChild(Object.assign(document.createElement("div"), { className: "time-name axis" }));
    markStalls(plot);
    dragging(plot);
    $("#time-clear").addEventListener("click", () => select(null));
    document.addEventListener("keydown", (e) => { if (e.key === "Escape" && sel && !$("#v-time").hidden) select(null); });
    window.addEventListener("resize", () => { if (!$("#v-time").hidden) { paint(); drawFlame(); if (grid) grid.draw(); } });
  }

  // -- the lanes ----------------------------------------------------------------------------
  function paint() {
    const rows = document.querySelectorAll("#time-lanes .time-lane");
    rows.forEach((row, i) => {
      const lane = T.lanes[i], canvas = row.firstChild;
      const w = Math.max(1, row.clientWidth), h = row.clientHeight || 18, dpr = window.devicePixelRatio || 1;
      canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
      canvas.style.width = w + "px"; canvas.style.height = h + "px";
      const g = canvas.getContext("2d");
      g.scale(dpr, dpr);
      const col = w / N;
      for (let b = 0; b < N; b++) {
        const all = lane.counted[b] + lane.idle[b] + lane.dropped[b];
        if (!all) continue;
        // Whole pixels, so that neighbouring columns meet without a seam.
        const x = Math.floor(b * col), cw = Math.max(1, Math.floor((b + 1) * col) - x);
        const part = { cpu: lane.cpu[b], counted: lane.counted[b] - (SPLIT ? lane.cpu[b] : 0), idle: lane.idle[b] };
        let y = h;
        for (const [k, , colour] of KINDS) {
          const v = part[k];
          if (!v) continue;
          const dy = h * v / all;
          g.fillStyle = colour;
          g.fillRect(x, y - dy, cw, dy);
          y -= dy;
        }
        if (lane.dropped[b]) {
          g.fillStyle = DROPPED;
          g.fillRect(x, 0, cw, h * lane.dropped[b] / all);
        }
      }
    });
    // Seconds along the bottom, at a round step giving about a label per 90 pixels.
    const axis = $("#time-lanes .time-axis"), width = axis.clientWidth || 800;
    const raw = TOTAL / Math.max(1, width / 90), p10 = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((m) => m * p10).find((s) => s >= raw);
    const first = Math.ceil(T.origin / step) * step, digits = Math.max(0, -Math.floor(Math.log10(step)));
    let html = "";
    for (let t = first; t <= T.origin + TOTAL + 1e-9; t += step) {
      html += '<span style="left:' + (100 * (t - T.origin) / TOTAL) + '%">' + t.toFixed(digits) + " s</span>";
    }
    axis.innerHTML = html;
  }
  const place = (start, length) => "left:" + (100 * (start - T.origin) / TOTAL) + "%;width:" + Math.max(0.15, 100 * length / TOTAL) + "%";

  // Each stall on its thread's lane; a click selects its stretch.
  function markStalls(plot) {
    if (!D.stalls) return;
    D.stalls.rows.forEach((s, i) => {
      const row = plot.querySelector('.time-lane[data-thread="' + s.index + '"]');
      if (!row) return;
      const m = document.createElement("div");
      m.className = "time-stall";
      m.dataset.stall = i;
      // Drawn within the plot: a snapshot's stall may have begun before its window.
      const from = Math.max(s.start, T.origin), to = Math.min(s.start + s.duration, T.origin + TOTAL);
      m.style.cssText = place(from, Math.max(0, to - from));
      m.title = "stall at " + fmt(s.start) + " s for " + fmt(s.duration) + " s in " + (s.f.length ? stdName(s.f[0]) : "?") + " (click to select it)";
      m.addEventListener("mousedown", (e) => e.stopPropagation());
      m.addEventListener("click", () => select([s.start, s.start + s.duration]));
      row.appendChild(m);
    });
  }

  // A drag across the plot selects the columns it covers.
  function dragging(plot) {
    let from = null;
    const at = (e) => {
      const r = plot.getBoundingClientRect();
      return T.origin + TOTAL * Math.min(1, Math.max(0, (e.clientX - r.left) / r.width));
    };
    plot.addEventListener("mousedown", (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      from = at(e);
      show([from, from]);
    });
    document.addEventListener("mousemove", (e) => { if (from !== null) show([from, at(e)].sort((a, b) => a - b)); });
    // A button released outside the page is never seen: the drag ends with the focus.
    window.addEventListener("blur", () => { if (from !== null) { from = null; show(sel); } });
    document.addEventListener("mouseup", (e) => {
      if (from === null) return;
      const to = at(e), r = plot.getBoundingClientRect();
      const wide = Math.abs(to - from) / TOTAL * r.width >= 3;
      from = wide ? (select([from, to].sort((a, b) => a - b)), null) : (show(sel), null);
    });
  }
  function show(range) {
    const box = $("#time-sel");
    box.hidden = !range;
    if (range) box.style.cssText = place(range[0], range[1] - range[0]);
  }

  // -- the selection: its columns, and what they counted ----------------------------------------
  // The columns [first, last) a stretch of seconds covers, at least one.
  function columns(range) {
    if (!range) return [0, N];
    const a = Math.max(0, Math.min(N - 1, Math.floor((range[0] - T.origin) / W + 1e-9)));
    const b = Math.max(a + 1, Math.min(N, Math.ceil((range[1] - T.origin) / W - 1e-9)));
    return [a, b];
  }
  function select(range) {
    sel = range;
    show(sel);
    $("#time-clear").disabled = !sel;
    draw();
  }
  // Own and total ticks per function, and the tree of call paths, of the columns and thread.
  function aggregate() {
    const [a, b] = columns(sel), t = api.thread();
    // The thread's index in the run; a timeline's threads are matched by name.
    let runThread = t >= 0 ? D.threads[t].index : -1;
    if (t >= 0 && runThread < 0) { const l = T.lanes.find((x) => x.name === D.threads[t].name); runThread = l ? l.thread : -1; }
    const own = new Map(), cum = new Map(), stamp = new Map(), root = { f: -1, w: 0, kids: new Map() };
    let total = 0, seq = 0;
    for (let k = cellAt[a]; k < cellAt[b]; k++) {
      const s = C.s[k], w = C.w[k];
      if (runThread >= 0 && ST.thread[s] !== runThread) continue;
      total += w;
      seq++;
      root.w += w;
      let node = root;
      for (let i = stackAt[s]; i < stackAt[s + 1]; i++) {
        const f = ST.f[i];
        // A function on the stack twice (recursion) counts once in its total.
        if (stamp.get(f) !== seq) { stamp.set(f, seq); cum.set(f, (cum.get(f) || 0) + w); }
        let kid = node.kids.get(f);
        if (!kid) { kid = { f, w: 0, kids: new Map(), parent: node }; node.kids.set(f, kid); }
        kid.w += w;
        node = kid;
        if (i === stackAt[s + 1] - 1) own.set(f, (own.get(f) || 0) + w);
      }
    }
    return { a, b, total, own, cum, root, funcs: Array.from(cum.keys()) };
  }

  function draw() {
    if (!built) build();
    paint();
    agg = aggregate();
    // A zoomed frame belongs to the tree it was drawn from.
    zoom = null;
    const span = [T.origin + agg.a * W, T.origin + agg.b * W];
    $("#time-sel-note").innerHTML = (sel ? "<b>Selected " + fmt(span[0]) + "&ndash;" + fmt(span[1]) + " s</b>" : "<b>The whole run</b>") +
      ": " + amount(agg.total) + (TRACED ? " in calls" : "") + (api.thread() >= 0 ? " of " + esc(D.threads[api.thread()].name) : "") +
      (sel ? " (Esc or the button clears it)" : "") + ".";
    drawTable();
    drawFlame();
  }

  function drawTable() {
    if (!grid) {
      // The columns read the selection's figures as they are at each draw.
      const I = T.interval, own = (f) => agg.own.get(f) || 0, cum = (f) => agg.cum.get(f) || 0;
      const pc = (v) => (agg.total ? (100 * v / agg.total).toFixed(2) + "%" : "&ndash;");
      const columns = [
        { label: "nsamples", width: fit(9, "nsamples"), cell: (f) => cum(f), num: (f) => cum(f), title: "samples with the function on the stack" },
        { label: "tottime", width: fit(12, "tottime"), cell: (f) => (own(f) * I).toFixed(6), num: (f) => own(f), title: "time in the function itself (s)" },
        { label: "%", width: fit(7, "%"), cell: (f) => pc(own(f)), num: (f) => own(f) },
        { label: "cumtime", width: fit(12, "cumtime"), cell: (f) => (cum(f) * I).toFixed(6), num: (f) => cum(f), title: "time with the function on the stack (s)" },
        { label: "%", width: fit(7, "%"), cell: (f) => pc(cum(f)), num: (f) => cum(f) },
        { label: "filename:lineno(function)", text: true, cls: "path", cell: (f) => link(f), str: (f) => stdName(f) },
      ];
      // A timeline's stretch has times, not samples, to count.
      if (TRACED) columns.shift();
      grid = new Grid($("#time-table"), columns, { sort: TRACED ? 0 : 1 });
    }
    grid.setRows(agg.funcs);
  }

  // -- the flame graph of the selection: callers above callees, a click zooms -------------------
  function drawFlame() {
    const host = $("#time-flame");
    if (!agg) return;
    const top = zoom || agg.root, width = Math.max(200, host.clientWidth - 2), H = 17;
    if (!top.w) { host.innerHTML = '<p class="empty">Nothing here.</p>'; return; }
    const out = [];
    let depth = 0;
    // The zoomed frame's callers, each as wide as the graph.
    const above = [];
    for (let n = top; n; n = n.parent) above.unshift(n);
    for (const n of above.slice(0, -1)) out.push(frame(n, 0, width, depth++));
    const lay = (n, x, d, w) => {
      if (w < 0.5) return;
      out.push(frame(n, x, w, d, n.w));
      let cx = x;
      const kids = Array.from(n.kids.values()).sort((p, q) => pyOrder(p.f, q.f));
      for (const k of kids) { const kw = w * k.w / n.w; lay(k, cx, d + 1, kw); cx += kw; }
    };
    lay(top, 0, depth, width);
    let rows = 0;
    for (const o of out) rows = Math.max(rows, o.d + 1);
    host.innerHTML = '<svg width="' + width + '" height="' + rows * H + '" xmlns="http://www.w3.org/2000/svg">' + out.map((o) =>
      '<g class="tf" data-f="' + o.n.f + '" data-w="' + o.n.w + '" transform="translate(' + o.x.toFixed(2) + "," + o.d * H + ')"><title>' +
      esc(o.name) + " (" + amount(o.n.w) + ", " + (100 * o.n.w / agg.root.w).toFixed(2) + "%)</title>" +
      '<rect width="' + Math.max(0.5, o.w - 0.5).toFixed(2) + '" height="' + (H - 1) + '" fill="' + o.colour + '"/>' +
      (o.w > 30 ? '<text x="3" y="12">' + esc(clip(o.name, o.w)) + "</text>" : "") + "</g>").join("") + "</svg>";
    const nodes = out.map((o) => o.n);
    host.querySelectorAll("g.tf").forEach((g, i) => g.addEventListener("click", () => {
      // A frame zooms in; the zoomed frame (or one of its callers) zooms out to its caller.
      const n = nodes[i], back = n === zoom || (zoom && above.includes(n));
      zoom = n === agg.root ? null : back ? n.parent : n;
      if (zoom === agg.root) zoom = null;
      drawFlame();
    }));
  }
  function frame(n, x, w, d) {
    const name = n.f < 0 ? "all" : stdName(n.f, true);
    // Warm colours, steady per function (as a flame graph's are).
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    const colour = n.f < 0 ? "#c8c8d0" : "hsl(" + (10 + h % 40) + "," + (70 + h % 20) + "%," + (58 + h % 12) + "%)";
    return { n, x, w, d, name, colour };
  }
  const clip = (s, w) => { const fits = Math.floor((w - 6) / 6.5); return s.length <= fits ? s : s.slice(0, Math.max(0, fits - 1)) + "\u2026"; };
  const pyOrder = (a, b) => (stdName(a) < stdName(b) ? -1 : stdName(a) > stdName(b) ? 1 : 0);

  return { draw };
}
