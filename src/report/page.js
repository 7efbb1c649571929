// rprofile's report page: the table, a function's callers and callees, the flame graphs, line
// heat, memory and a comparison, all from the JSON blob above (see src/report/data.rs for its
// columns). Tables draw only the rows in view, so 100,000 functions scroll and sort at once.
(() => {
  "use strict";
  const D = JSON.parse(document.getElementById("rprofile-data").textContent);
  const $ = (s) => document.querySelector(s);
  const S = D.strings, FN = D.fn, U = D.unit, ROWS = D.rows;
  const NFN = FN.file.length;
  // The rows are functions 0, 1, ...; a row's callers come as differences of their ids.
  ROWS.f = Array.from({ length: ROWS.nc.length }, (_, i) => i);
  {
    const n = D.callers.n, f = D.callers.f;
    for (let r = 0, k = 0; r < n.length; r++) for (let e = 0, id = 0; e < n[r]; e++, k++) f[k] = id += f[k];
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const strip = $("#strip"), regex = $("#regex"), filter = $("#filter"), threadSel = $("#thread");

  // -- names, as pstats writes them ------------------------------------------------------------
  const base = (p) => p.slice(p.lastIndexOf("/") + 1);
  function stdName(f, short) {
    const file = S[FN.file[f]], name = S[FN.name[f]], line = FN.line[f];
    if (file === "~" && line === 0) {
      return name.length >= 2 && name[0] === "<" && name[name.length - 1] === ">" ? "{" + name.slice(1, -1) + "}" : name;
    }
    return (short ? base(file) : file) + ":" + line + "(" + name + ")";
  }
  const label = (f) => stdName(f, strip.checked);
  // Left to right inside cells that cut a long path from the left (class "path"), so that
  // the file's name and the function stay in view; the full name is the title.
  const link = (f) => '<a class="fn" dir="ltr" href="#f/' + f + '" title="' + esc(stdName(f)) + '">' + esc(label(f)) + "</a>";
  // Python compares strings by code point; JavaScript by UTF-16 unit: this orders as Python.
  function pyCompare(a, b) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) {
      let x = a.charCodeAt(i), y = b.charCodeAt(i);
      if (x === y) continue;
      if (x >= 0xd800 && x <= 0xdfff) x += 0x2000; else if (x >= 0xe000) x -= 0x800;
      if (y >= 0xd800 && y <= 0xdfff) y += 0x2000; else if (y >= 0xe000) y -= 0x800;
      return x - y;
    }
    return a.length - b.length;
  }

  // -- numbers --------------------------------------------------------------------------------
  const secs = (units, unit) => (units * (unit || U)).toFixed(6);
  const per = (units, n) => (n ? (units * U / n).toFixed(6) : "&ndash;");
  const calls = (nc, cc) => (nc === cc ? String(nc) : nc + "/" + cc);
  const totalTt = D.total.tt;
  const pct = (units) => (totalTt ? (100 * units / totalTt).toFixed(2) + "%" : "&ndash;");
  // A cumtime above the total: said why where it shows (the note above the table says more).
  const OVER = "More than the total: the total is the sum of every function's own time; this " +
    "function's outermost calls took longer (see the note above the table)";
  const pctCum = (units) => (totalTt && units > totalTt ? '<span class="over" title="' + OVER + '">' + pct(units) + "</span>" : pct(units));
  // A column's CSS width for values of up to `chars` characters (and its heading).
  const fit = (chars, heading) => "calc(" + Math.max(chars, heading.length + 2) + "ch + 18px)";
  // The length of the widest of `n` values formatted by `fmt`: that of the largest or smallest.
  function widest(n, value, fmt) {
    let hi = 0, lo = 0;
    for (let r = 0; r < n; r++) { const v = value(r); if (v > hi) hi = v; else if (v < lo) lo = v; }
    return Math.max(String(fmt(hi)).length, String(fmt(lo)).length);
  }
  // The length of the widest "ncalls/primitive" of `n` rows.
  function widestCalls(n, nc, cc) {
    let m = 1;
    for (let r = 0; r < n; r++) {
      const l = String(nc(r)).length + (nc(r) === cc(r) ? 0 : 1 + String(cc(r)).length);
      if (l > m) m = l;
    }
    return m;
  }
  const bytes = (n) => n.toLocaleString("en-US");
  const signed = (units) => (units > 0 ? "+" : "") + secs(units);
  // The largest of many values (at least 1), without spreading them as arguments.
  const most = (values) => { let m = 1; for (const v of values) if (v > m) m = v; return m; };

  // -- a table that draws only the rows in view -----------------------------------------------
  // columns: {label, text (left-aligned), width, cell(row) -> HTML, and one sort: rank (an array
  // giving each row's place, pstats' order), num(row) (largest first) or str(row) (A first)}.
  class Grid {
    constructor(host, columns, opts) {
      this.host = host; this.columns = columns; this.rows = []; this.order = [];
      this.sortCol = opts && opts.sort !== undefined ? opts.sort : -1; this.up = false;
      this.rowClass = (opts && opts.rowClass) || null;
      const t = document.createElement("table");
      t.innerHTML = "<colgroup>" + columns.map((c) => '<col style="width:' + (c.width || "auto") + '">').join("") +
        "</colgroup><thead><tr>" + columns.map((c, i) =>
          '<th data-i="' + i + '" class="' + (c.text ? "text" : "") + '" title="' + esc(c.title || c.label) + '">' + c.label + "</th>").join("") +
        "</tr></thead><tbody></tbody>";
      this.body = t.tBodies[0];
      host.appendChild(t);
      t.tHead.addEventListener("click", (e) => {
        const th = e.target.closest("th");
        if (th) this.sortBy(+th.dataset.i);
      });
      let queued = false;
      host.addEventListener("scroll", () => {
        if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; this.draw(); }); }
      });
    }
    setRows(rows) { this.rows = rows; this.sort(); }
    sortBy(i) {
      if (this.sortCol === i) this.up = !this.up; else { this.sortCol = i; this.up = false; }
      this.sort();
    }
    sort() {
      const c = this.columns[this.sortCol];
      let order = this.rows;
      if (c && c.rank) {
        // The rank is a permutation of every row: walk it, keeping the rows shown. O(n).
        const keep = new Uint8Array(c.rank.length), inv = new Int32Array(c.rank.length);
        for (const r of this.rows) keep[r] = 1;
        for (let r = 0; r < c.rank.length; r++) inv[c.rank[r]] = r;
        order = [];
        for (let k = 0; k < inv.length; k++) if (keep[inv[k]]) order.push(inv[k]);
      } else if (c && c.num) {
        const v = new Float64Array(this.rows.length);
        this.rows.forEach((r, k) => { v[k] = c.num(r); });
        const idx = this.rows.map((_, k) => k).sort((a, b) => v[b] - v[a] || a - b);
        order = idx.map((k) => this.rows[k]);
      } else if (c && c.str) {
        const v = this.rows.map((r) => c.str(r));
        // JavaScript's own comparison is Python's unless a string holds surrogates (or what
        // follows them): only then the slower one.
        const plain = !v.some((x) => /[\ud800-\uffff]/.test(x));
        const cmp = plain ? (a, b) => (v[a] < v[b] ? -1 : v[a] > v[b] ? 1 : a - b) : (a, b) => pyCompare(v[a], v[b]) || a - b;
        const idx = this.rows.map((_, k) => k).sort(cmp);
        order = idx.map((k) => this.rows[k]);
      } else {
        order = this.rows.slice();
      }
      if (this.up) order = order.slice().reverse();
      this.order = order;
      this.host.querySelectorAll("th").forEach((th, i) => {
        th.classList.toggle("sorted", i === this.sortCol);
        th.classList.toggle("up", i === this.sortCol && this.up);
      });
      this.draw();
    }
    draw() {
      const h = 20, n = this.order.length;
      const first = Math.max(0, Math.floor(this.host.scrollTop / h) - 10);
      const last = Math.min(n, first + Math.ceil((this.host.clientHeight || 800) / h) + 20);
      const cols = this.columns.length, out = [];
      out.push('<tr class="spacer"><td colspan="' + cols + '" style="height:' + first * h + 'px"></td></tr>');
      for (let k = first; k < last; k++) {
        const r = this.order[k];
        const cls = this.rowClass ? this.rowClass(r) : "";
        out.push('<tr data-row="' + r + '"' + (cls ? ' class="' + cls + '"' : "") + ">" + this.columns.map((c) =>
          "<td" + (c.text ? ' class="text' + (c.cls ? " " + c.cls : "") + '"' : c.cls ? ' class="' + c.cls + '"' : "") +
          (c.style ? ' style="' + c.style(r) + '"' : "") + ">" + c.cell(r) + "</td>").join("") + "</tr>");
      }
      out.push('<tr class="spacer"><td colspan="' + cols + '" style="height:' + (n - last) * h + 'px"></td></tr>');
      this.body.innerHTML = out.join("");
    }
  }

  // -- what the views show: the whole profile or one thread's -----------------------------------
  function source(t) {
    const s = t < 0 ? ROWS : D.threads[t];
    if (!s.names) s.names = { full: null, short: null };
    return s;
  }
  function names(s) {
    const k = strip.checked ? "short" : "full";
    if (!s.names[k]) s.names[k] = s.f.map((f) => stdName(f, strip.checked));
    return s.names[k];
  }
  // The rows whose name the filter finds (all without a filter); null for a bad pattern.
  function matching(count, nameOf) {
    const text = filter.value;
    const all = Array.from({ length: count }, (_, i) => i);
    filter.classList.remove("bad");
    if (!text) return all;
    let test;
    if (regex.checked) {
      try { const re = new RegExp(text); test = (s) => re.test(s); } catch (e) { filter.classList.add("bad"); return null; }
    } else {
      const low = text.toLowerCase();
      test = (s) => s.toLowerCase().includes(low);
    }
    return all.filter((i) => test(nameOf(i)));
  }
  const thread = () => (threadSel.value === "" ? -1 : +threadSel.value);
  const counted = (shown, all) => {
    $("#count").textContent = shown === all ? all + " functions" : shown + " of " + all + " functions";
  };

  // -- the table ----------------------------------------------------------------------------------
  const H = D.sampled ? ["nsamples", "persample"] : ["ncalls", "percall"];
  let mainGrid = null, gridSource = null;
  function tableColumns(s) {
    const n = s.f.length, nc = (r) => s.nc[r], cc = (r) => s.cc[r];
    const wTime = fit(Math.max(widest(n, (r) => s.tt[r], secs), widest(n, (r) => s.ct[r], secs)), "cumtime");
    const wPct = fit(Math.max(widest(n, (r) => s.tt[r], pct), widest(n, (r) => s.ct[r], pct)), "%");
    const wPer = fit(Math.max(widest(n, (r) => (s.nc[r] ? s.tt[r] / s.nc[r] : 0), (x) => per(x, 1)),
      widest(n, (r) => (s.cc[r] ? s.ct[r] / s.cc[r] : 0), (x) => per(x, 1))), H[1]);
    return [
      { label: H[0], width: fit(widestCalls(n, nc, cc), H[0]), cell: (r) => calls(s.nc[r], s.cc[r]), num: (r) => s.nc[r],
        title: D.sampled ? "samples with the function on the stack/running" : "calls/primitive calls" },
      { label: "tottime", width: wTime, cell: (r) => secs(s.tt[r]), rank: s.ttRank, title: "time in the function itself (s)" },
      { label: "%", width: wPct, cell: (r) => pct(s.tt[r]), rank: s.ttRank, title: "tottime, share of the total" },
      { label: H[1], width: wPer, cell: (r) => per(s.tt[r], s.nc[r]), num: (r) => (s.nc[r] ? s.tt[r] / s.nc[r] : 0), title: "tottime / ncalls" },
      { label: "cumtime", width: wTime, cell: (r) => secs(s.ct[r]), rank: s.ctRank, title: "time in it and the functions it called (s)" },
      { label: "%", width: wPct, cell: (r) => pctCum(s.ct[r]), rank: s.ctRank, title: "cumtime, share of the total" },
      { label: H[1], width: wPer, cell: (r) => per(s.ct[r], s.cc[r]), num: (r) => (s.cc[r] ? s.ct[r] / s.cc[r] : 0), title: "cumtime / primitive calls" },
      { label: "filename:lineno(function)", text: true, cls: "path", cell: (r) => link(s.f[r]), str: (r) => names(s)[r] },
    ];
  }
  // Said above the table when a cumulative time is more than the total.
  function overNote(s) {
    let most = 0;
    for (const ct of s.ct) if (ct > most) most = ct;
    const note = $("#table-note");
    note.hidden = !(totalTt > 0 && most > totalTt);
    if (note.hidden) return;
    note.innerHTML = "<b>Cumulative times above 100% (up to " + pct(most) + ")</b>: the total is the sum of every " +
      "function's own time (tottime), as pstats counts it, and a cumtime the time of a function's outermost calls. " +
      "A cumtime is larger when that time was not all one stack's: with several threads' calls on one stack " +
      "(Python 3.12 and later without <code>threads=True</code>, as cProfile records them) calls end out of order and " +
      "a time can count in more than one outermost call; with <code>async_aware=True</code> a coroutine's time includes " +
      "its awaits, and instances of it run at the same time. Record with <code>threads=True</code> " +
      "(<code>--threads</code>) for one stack per thread.";
  }
  function drawTable() {
    const s = source(thread());
    if (!mainGrid || gridSource !== s) {
      const host = $("#v-table .scroller");
      // At first the column of the stats' own sort (pstats' first key), tottime by default.
      const first = { ncalls: 0, tottime: 1, cumtime: 4, name: 7 }[D.sort];
      const keep = mainGrid ? [mainGrid.sortCol, mainGrid.up] : [first === undefined ? 1 : first, false];
      host.innerHTML = "";
      mainGrid = new Grid(host, tableColumns(s), { sort: keep[0] });
      mainGrid.up = keep[1];
      gridSource = s;
      overNote(s);
    }
    const nm = names(s);
    const rows = matching(s.f.length, (i) => nm[i]);
    if (rows === null) return;
    mainGrid.setRows(rows);
    counted(rows.length, s.f.length);
  }

  // -- a function's page: its figures, callers and callees ----------------------------------------
  const rowOf = new Int32Array(NFN).fill(-1);
  ROWS.f.forEach((f, i) => { rowOf[f] = i; });
  const C = D.callers, edgeStart = new Int32Array(ROWS.f.length + 1);
  C.n.forEach((n, i) => { edgeStart[i + 1] = edgeStart[i] + n; });
  const edgeCc = new Map();
  for (let k = 0; k < C.cc.length; k += 2) edgeCc.set(C.cc[k], C.cc[k + 1]);
  const countEdge = new Set(C.count);
  let callees = null;
  function calleeIndex() {
    if (callees) return callees;
    const E = C.f.length, start = new Int32Array(NFN + 1), edges = new Int32Array(E), row = new Int32Array(E);
    for (let r = 0; r < ROWS.f.length; r++) for (let k = edgeStart[r]; k < edgeStart[r + 1]; k++) { row[k] = r; start[C.f[k] + 1]++; }
    for (let f = 0; f < NFN; f++) start[f + 1] += start[f];
    const at = start.slice(0, NFN);
    for (let k = 0; k < E; k++) edges[at[C.f[k]]++] = k;
    callees = { start, edges, row };
    return callees;
  }
  function edgeTable(list, other) {
    // list: edge indices; other(k): the function at the other end.
    if (!list.length) return '<p class="empty">none</p>';
    list.sort((a, b) => C.ct[b] - C.ct[a] || C.nc[b] - C.nc[a]);
    const shown = list.slice(0, 2000);
    const ccOf = (k) => (edgeCc.has(k) ? edgeCc.get(k) : C.nc[k]);
    const wCalls = fit(widestCalls(shown.length, (i) => C.nc[shown[i]], (i) => ccOf(shown[i])), H[0]);
    const rows = shown.map((k) => {
      const cc = ccOf(k);
      const times = countEdge.has(k) ? "<td>&ndash;</td><td>&ndash;</td>" : "<td>" + secs(C.tt[k], C.unit) + "</td><td>" + secs(C.ct[k], C.unit) + "</td>";
      return "<tr><td>" + calls(C.nc[k], cc) + "</td>" + times + '<td class="text path">' + link(other(k)) + "</td></tr>";
    });
    return '<table class="edges"><colgroup><col style="width:' + wCalls + '"><col style="width:7.5em"><col style="width:7.5em"><col></colgroup>' +
      "<thead><tr><th>" + H[0] + "</th><th>tottime</th><th>cumtime</th><th class=\"text\">filename:lineno(function)</th></tr></thead><tbody>" +
      rows.join("") + "</tbody></table>" + (list.length > shown.length ? '<p class="empty">and ' + (list.length - shown.length) + " more</p>" : "");
  }
  function drawFunction(f) {
    const host = $("#v-func .scroller");
    if (!(f >= 0 && f < NFN)) { host.innerHTML = "<h2>No such function</h2>"; return; }
    const r = rowOf[f];
    let html = "<h2>" + esc(stdName(f)) + "</h2>";
    html += '<p><button id="to-flame">Find in the flame graph</button></p>';
    if (r >= 0) {
      html += '<table class="one"><thead><tr><th>' + H[0] + "</th><th>tottime</th><th>%</th><th>" + H[1] + "</th><th>cumtime</th><th>%</th><th>" + H[1] +
        "</th></tr></thead><tbody><tr><td>" + calls(ROWS.nc[r], ROWS.cc[r]) + "</td><td>" + secs(ROWS.tt[r]) + "</td><td>" + pct(ROWS.tt[r]) +
        "</td><td>" + per(ROWS.tt[r], ROWS.nc[r]) + "</td><td>" + secs(ROWS.ct[r]) + "</td><td>" + pctCum(ROWS.ct[r]) + "</td><td>" +
        per(ROWS.ct[r], ROWS.cc[r]) + "</td></tr></tbody></table>";
    } else {
      html += '<p class="empty">Not a row of the profile: it appears only as a caller.</p>';
    }
    const callers = [];
    if (r >= 0) for (let k = edgeStart[r]; k < edgeStart[r + 1]; k++) callers.push(k);
    html += '<h3 id="callers">Called by (' + callers.length + ")</h3>" + edgeTable(callers, (k) => C.f[k]);
    const ix = calleeIndex(), out = Array.from(ix.edges.subarray(ix.start[f], ix.start[f + 1]));
    html += '<h3 id="callees">Calls (' + out.length + ")</h3>" + edgeTable(out, (k) => ROWS.f[ix.row[k]]);
    host.innerHTML = html;
    host.scrollTop = 0;
    $("#to-flame").onclick = () => {
      const file = S[FN.file[f]], name = S[FN.name[f]];
      const lbl = file === "~" && FN.line[f] === 0 ? name : name + " (" + file + ":" + FN.line[f] + ")";
      $("#flame-search").value = lbl;
      location.hash = "#flame";
    };
  }

  // -- flame graphs (inferno's SVGs, each in a frame of its own) ------------------------------------
  const frames = new Map();
  let frameLabels = null;
  function frameLabelIndex() {
    if (frameLabels) return frameLabels;
    frameLabels = new Map();
    for (let f = 0; f < NFN; f++) {
      const file = S[FN.file[f]], name = S[FN.name[f]];
      frameLabels.set(file === "~" && FN.line[f] === 0 ? name : name + " (" + file + ":" + FN.line[f] + ")", f);
    }
    return frameLabels;
  }
  function graphIndex() {
    const G = D.flame.graphs, t = thread();
    if (t >= 0) { const i = G.findIndex((g) => g[0] === D.threads[t].name); if (i >= 0) return i; }
    return 0;
  }
  function drawFlame() {
    if (!D.flame) return;
    const i = graphIndex(), host = $("#v-flame");
    for (const [k, fr] of frames) fr.hidden = k !== i;
    let fr = frames.get(i);
    if (!fr) {
      fr = document.createElement("iframe");
      fr.title = "flame graph: " + D.flame.graphs[i][0];
      fr.dataset.graph = i;
      // The SVG's script keeps zoom and search in the URL: not possible in a frame from srcdoc.
      fr.srcdoc = '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0}svg{width:100%;display:block}</style>' +
        "\x3cscript>history.replaceState=function(){};\x3c/script></head><body>" + D.flame.graphs[i][1] + "</body></html>";
      fr.addEventListener("load", () => {
        fr.contentDocument.addEventListener("dblclick", (e) => {
          const g = e.target.closest("#frames > g");
          const title = g && g.querySelector("title");
          if (!title) return;
          const f = frameLabelIndex().get(title.textContent.replace(/ \([^()]*\)$/, ""));
          if (f !== undefined) location.hash = "#f/" + f;
        });
        searchFlame();
      });
      frames.set(i, fr);
      host.appendChild(fr);
    } else {
      searchFlame();
    }
  }
  function searchFlame() {
    const fr = frames.get(graphIndex());
    const w = fr && fr.contentWindow;
    // The graph's script has run once it found its search button.
    if (!w || typeof w.search !== "function" || !w.searchbtn) return;
    const box = $("#flame-search"), text = box.value;
    box.classList.remove("bad");
    w.reset_search();
    w.searching = 0;
    if (w.matchedtxt) { w.matchedtxt.classList.add("hide"); w.searchbtn.classList.remove("show"); w.searchbtn.firstChild.nodeValue = "Search"; }
    if (!text) return;
    let term = text;
    if (!regex.checked) term = text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    try { new RegExp(term); } catch (e) { box.classList.add("bad"); return; }
    w.search(term);
  }

  // -- line heat of a sampled run ---------------------------------------------------------------
  let heatGrid = null;
  function drawLines() {
    const sel = $("#heat-file"), file = D.heat[+sel.value || 0];
    if (!file) return;
    const src = file.src.split("\n"), t = thread(), own = new Float64Array(src.length + 2), cum = new Float64Array(src.length + 2);
    const tIndex = t >= 0 ? D.threads[t].index : -1;
    if (tIndex >= 0 && file.threads.length) {
      for (let k = 0; k < file.threads.length; k += 4) {
        if (file.threads[k] === tIndex && file.threads[k + 1] >= 1 && file.threads[k + 1] <= src.length) {
          own[file.threads[k + 1]] = file.threads[k + 2]; cum[file.threads[k + 1]] = file.threads[k + 3];
        }
      }
    } else {
      for (let k = 0; k < file.lines.length; k += 3) {
        const l = file.lines[k];
        if (l >= 1 && l <= src.length) { own[l] = file.lines[k + 1]; cum[l] = file.lines[k + 2]; }
      }
    }
    const maxOwn = most(own), maxCum = most(cum);
    const shade = (v, m) => (v ? "background:rgba(var(--hot)," + (0.08 + 0.6 * v / m).toFixed(3) + ")" : "");
    const host = $("#v-lines .scroller");
    host.innerHTML = "";
    heatGrid = new Grid(host, [
      { label: "line", width: "5em", cls: "lineno", cell: (r) => r + 1, num: (r) => -r },
      { label: "self", width: "6em", cell: (r) => own[r + 1] || "", num: (r) => own[r + 1], style: (r) => shade(own[r + 1], maxOwn) },
      { label: "cumulative", width: "7em", cell: (r) => cum[r + 1] || "", num: (r) => cum[r + 1], style: (r) => shade(cum[r + 1], maxCum) },
      { label: esc(file.file), text: true, cls: "src", cell: (r) => esc(src[r]), style: (r) => shade(cum[r + 1], maxCum * 2) },
    ], { sort: 0 });
    heatGrid.setRows(Array.from({ length: src.length }, (_, i) => i));
    // The hottest line in view.
    let hot = 0;
    for (let l = 1; l <= src.length; l++) if (own[l] > own[hot]) hot = l;
    host.scrollTop = Math.max(0, (hot - 8) * 20);
  }

  // -- memory ---------------------------------------------------------------------------------------
  let memGrid = null;
  function drawMemory() {
    const M = D.memory;
    if (!memGrid) {
      memGrid = new Grid($("#v-memory .scroller"), [
        { label: "net", width: "9em", cell: (r) => bytes(M.net[r]), num: (r) => M.net[r], title: "allocated - freed while profiling (bytes)" },
        { label: "peak", width: "9em", cell: (r) => bytes(M.peak[r]), num: (r) => M.peak[r] },
        { label: "allocated", width: "9em", cell: (r) => bytes(M.allocated[r]), num: (r) => M.allocated[r] },
        { label: "freed", width: "9em", cell: (r) => bytes(M.freed[r]), num: (r) => M.freed[r] },
        { label: "allocations", width: "8em", cell: (r) => bytes(M.allocations[r]), num: (r) => M.allocations[r] },
        { label: "filename:lineno(function)", text: true, cls: "path", cell: (r) => link(M.f[r]), str: (r) => label(M.f[r]) },
      ], { sort: 0 });
    }
    const rows = matching(M.f.length, (i) => label(M.f[i]));
    if (rows) memGrid.setRows(rows);
    if (rows) counted(rows.length, M.f.length);
  }

  // -- types ----------------------------------------------------------------------------------------
  // The counted types; the one picked (#types/i) with the functions that made its objects.
  let typeGrid = null, typePicked = -1;
  function drawTypes(arg) {
    const T = D.types;
    if (arg !== undefined && arg !== "") typePicked = +arg;
    if (!typeGrid) {
      const n = (k) => ({ width: "8em", cell: (r) => T[k][r].toLocaleString("en-US"), num: (r) => T[k][r] });
      typeGrid = new Grid($("#types-table"), [
        { label: "alive", ...n("alive"), title: "created while profiling and not destroyed by its end" },
        { label: "created", ...n("created") },
        { label: "destroyed", ...n("destroyed"), title: "of the objects created while profiling" },
        { label: "peak", ...n("peak"), title: "the most alive at once" },
        { label: "peak at", width: "7em", cell: (r) => T.peakTime[r].toFixed(3), num: (r) => T.peakTime[r], title: "seconds after tracking started" },
        { label: "older destroyed", ...n("older"), width: "10em", title: "objects made before profiling, destroyed during it" },
        { label: "type", text: true, cell: (r) => '<a class="fn" href="#types/' + r + '">' + esc(T.name[r]) + "</a>", str: (r) => T.name[r] },
      ], { sort: 0, rowClass: (r) => (r === typePicked ? "sel" : "") });
    }
    const rows = matching(T.name.length, (i) => T.name[i]);
    if (rows) {
      typeGrid.setRows(rows);
      $("#count").textContent = rows.length === T.name.length ? T.name.length + " types" : rows.length + " of " + T.name.length + " types";
    }
    const host = $("#types-makers");
    if (!(Number.isInteger(typePicked) && typePicked >= 0 && typePicked < T.name.length)) {
      host.innerHTML = '<p class="note">Pick a type above.</p>';
      return;
    }
    const t = typePicked, makers = T.makers[t];
    host.innerHTML = "<h3>" + esc(T.name[t]) + ": " + T.created[t].toLocaleString("en-US") + " created, " +
      T.alive[t].toLocaleString("en-US") + " alive, made by</h3>" + (makers.length
      ? '<table class="one"><thead><tr><th>created</th><th>alive</th><th class="text">filename:lineno(function)</th></tr></thead><tbody>' +
        makers.map(([f, c, a]) => "<tr><td>" + c.toLocaleString("en-US") + "</td><td>" + a.toLocaleString("en-US") +
          '</td><td class="text path">' + link(f) + "</td></tr>").join("") + "</tbody></table>"
      : '<p class="empty">No function.</p>') + survivors(T.stacks[t]);
  }
  // The call stacks that made a type's objects still alive, outermost call first.
  function survivors(stacks) {
    if (!stacks.length) return "";
    return '<h3>Still alive at the end, by the call stack that made them</h3><div id="types-stacks">' +
      stacks.map(([n, fs]) => '<div class="stack"><b>' + n.toLocaleString("en-US") + " alive</b><ol>" +
        (fs.length ? fs.map((f) => "<li>" + link(f) + "</li>").join("") : '<li class="empty">outside every profiled call</li>') +
        "</ol></div>").join("") + "</div>";
  }

  // -- stalls ---------------------------------------------------------------------------------------
  // Each stall of a sampling run: when, how long, which thread, and its heaviest innermost frames.
  function drawStalls() {
    const S = D.stalls, host = $("#v-stalls .scroller");
    if (host.dataset.drawn) return;
    host.dataset.drawn = "1";
    const shown = 5;
    host.innerHTML = S.rows.length ? S.rows.map((s, i) => '<div class="stall" id="stall-' + i + '"><b>at ' + s.start.toFixed(3) +
      " s for " + s.duration.toFixed(3) + " s</b>: " + esc(s.thread) + "<ul>" +
      s.f.slice(0, shown).map((f, k) => '<li><span class="share">' + (100 * s.n[k] / s.samples).toFixed(1) + "%</span> " + link(f) + " line " + s.line[k] + "</li>").join("") +
      (s.f.length > shown ? "<li>&hellip; " + (s.f.length - shown) + " more</li>" : "") + "</ul></div>").join("") : "<p>None.</p>";
  }

  // -- comparison -----------------------------------------------------------------------------------
  let cmp = null, cmpGrid = null;
  function comparison() {
    if (cmp) return cmp;
    // The rows after, then the rows before that are paired with none (B.pair: see pairs.rs).
    const B = D.before, list = ROWS.f.map((f, i) => ({ f, a: i, b: -1 }));
    B.f.forEach((f, i) => { const a = B.pair[i]; if (a >= 0) list[a].b = i; else list.push({ f, a: -1, b: i }); });
    const g = (arr, i) => (i < 0 ? 0 : arr[i]);
    for (const c of list) {
      c.dtt = g(ROWS.tt, c.a) - g(B.tt, c.b); c.dct = g(ROWS.ct, c.a) - g(B.ct, c.b); c.dnc = g(ROWS.nc, c.a) - g(B.nc, c.b);
    }
    const maxD = most(list.map((c) => Math.abs(c.dtt)));
    cmp = { list, maxD };
    return cmp;
  }
  function drawCompare() {
    const { list, maxD } = comparison(), B = D.before;
    if (!cmpGrid) {
      const c = (r) => list[r];
      const val = (arr, i, fmt) => (i < 0 ? "&ndash;" : fmt(arr[i]));
      const tone = (d) => (d > 0 ? "num-bad" : d < 0 ? "num-good" : "");
      const delta = (d) => '<span class="' + tone(d) + '">' + signed(d) + "</span>";
      const rel = (d, before) => (before ? '<span class="' + tone(d) + '">' + (d > 0 ? "+" : "") + (100 * d / before).toFixed(0) + "%</span>" : d ? "new" : "");
      cmpGrid = new Grid($("#v-compare .scroller"), [
        { label: "&Delta; tottime", width: "9em", cell: (r) => delta(c(r).dtt), num: (r) => Math.abs(c(r).dtt), title: "after - before (s), largest change first" },
        { label: "&Delta;%", width: "5em", cell: (r) => rel(c(r).dtt, c(r).b < 0 ? 0 : B.tt[c(r).b]), num: (r) => (c(r).b < 0 || !B.tt[c(r).b] ? Infinity : c(r).dtt / B.tt[c(r).b]) },
        { label: "tottime before", width: "9.5em", cell: (r) => val(B.tt, c(r).b, secs), num: (r) => (c(r).b < 0 ? -1 : B.tt[c(r).b]) },
        { label: "after", width: "7.5em", cell: (r) => val(ROWS.tt, c(r).a, secs), num: (r) => (c(r).a < 0 ? -1 : ROWS.tt[c(r).a]) },
        { label: "&Delta; cumtime", width: "9em", cell: (r) => delta(c(r).dct), num: (r) => Math.abs(c(r).dct) },
        { label: "calls before", width: "8em", cell: (r) => (c(r).b < 0 ? "&ndash;" : calls(B.nc[c(r).b], B.cc[c(r).b])), num: (r) => (c(r).b < 0 ? -1 : B.nc[c(r).b]) },
        { label: "after", width: "7em", cell: (r) => (c(r).a < 0 ? "&ndash;" : calls(ROWS.nc[c(r).a], ROWS.cc[c(r).a])), num: (r) => (c(r).a < 0 ? -1 : ROWS.nc[c(r).a]) },
        { label: "filename:lineno(function)", text: true, cls: "path", cell: (r) => link(c(r).f), str: (r) => label(c(r).f),
          style: (r) => "background:rgba(var(--" + (c(r).dtt > 0 ? "hot" : "cool") + ")," + (0.35 * Math.abs(c(r).dtt) / maxD).toFixed(3) + ")" },
      ], { sort: 0, rowClass: (r) => (c(r).a < 0 ? "gone" : c(r).b < 0 ? "new" : "") });
    }
    const rows = matching(list.length, (i) => label(list[i].f));
    if (rows) cmpGrid.setRows(rows);
    if (rows) counted(rows.length, list.length);
  }

  // -- the page: header, tabs, routes -------------------------------------------------------------
  document.title = D.title + " \u2014 rprofile";
  $("#title").textContent = D.title;
  const tot = D.total;
  // pstats' line; for samples, the run's summary (or from a stats file, the samples counted).
  const figures = D.run ? D.run : D.sampled ? tot.prim + " samples (" + (tot.tt * U).toFixed(3) + " seconds)" :
    tot.calls + " function calls" + (tot.calls !== tot.prim ? " (" + tot.prim + " primitive calls)" : "") +
    " in " + (tot.tt * U).toFixed(3) + " seconds";
  $("#summary").textContent = figures + (D.files.length ? " \u2014 " + D.files.join(", ") : "");
  const has = { table: true, func: true, flame: !!D.flame, time: !!D.time, lines: D.heat.length > 0, memory: !!D.memory, types: !!D.types, stalls: !!D.stalls, compare: !!D.before };
  for (const a of document.querySelectorAll("nav a")) a.hidden = !has[a.dataset.view];
  if (D.threads.length) {
    threadSel.innerHTML = '<option value="">All threads</option>' + D.threads.map((t, i) => '<option value="' + i + '">' + esc(t.name) + "</option>").join("");
    $("#thread-box").hidden = false;
  }
  if (D.flame) {
    $("#flame-note").innerHTML = D.flame.compare
      ? "<b>Comparison</b> of the call paths, estimated from each profile's caller graph: frames are as wide as after, <b>red</b> where a path took longer than before, <b>blue</b> where it took less."
      : D.flame.estimate
        ? "<b>Estimated</b> call paths: this profile records each function's callers, not whole call paths, so each function's time is split over its callers in proportion to the time of their calls (as snakeviz's sunburst does). Record with <code>timeline=True</code> (<code>--timeline</code>) or sample (<code>--sample</code>) for real paths." +
          (D.flame.cut ? " Light paths are left inside their callers." : "")
        : D.sampled ? "Call paths as sampled." : "Call paths as recorded on the timeline.";
    // Where the estimate folded recursion (a cycle is one frame, a call back to the path has no
    // callees) or placed calls the stats lost.
    const folds = D.flame.folded || [], names = (k) => folds.filter((f) => f.kind === k).map((f) =>
      f.funcs.map((l) => "<code>" + esc(l) + "</code>").join(", ") + (f.count > f.funcs.length ? " and " + (f.count - f.funcs.length) + " more" : "")).join("; ");
    let said = "";
    if (names("cycle")) said += " Functions calling each other are drawn as one frame, named by the one called first, their callees below it: " + names("cycle") + ".";
    if (names("back")) said += " A call coming back to a function on its path through a built-in (<code>exec</code> by an import, <code>str.join</code>) is a frame without callees: " + names("back") + ".";
    if (names("adopted")) said += " No function in the profile calls " + names("adopted") + " (pstats keeps one row of functions of one file, line and name): drawn under the function whose callees fall short of its time.";
    if (said) $("#flame-note").innerHTML += ' <span id="flame-folded"><b>Recursion folded.</b>' + said + "</span>";
  }
  if (D.dropped) {
    // A full timeline buffer: the recorded call paths (the flame graph) miss a part of the run.
    const d = D.dropped, all = d.kept + d.dropped, n = (x) => x.toLocaleString("en-US");
    const step = 10 ** Math.max(0, String(all).length - 2), size = Math.ceil(all / step) * step;
    $("#warning").innerHTML = "<b>&#9888; The timeline's buffer was full: " + n(d.dropped) + " of " + n(all) +
      " events were dropped, the " + (d.keepNewest ? "oldest" : "newest") + "</b> (<code>when_full=\"" +
      (d.keepNewest ? "keep_newest" : "keep_oldest") + "\"</code>): the flame graph shows only the call paths of the " +
      (d.keepNewest ? "last " : "first ") + n(d.kept) + " events. The table's figures are complete. " +
      "To keep every event, record with a bigger buffer (24 bytes an event): <code>Profile(timeline=True, buffer_size=" +
      size + ")</code> or <code>python -m rprofile --timeline FILE --buffer-size " + size + "</code>.";
    $("#warning").hidden = false;
  }
  if (D.stalls) {
    const S = D.stalls, n = S.rows.length;
    $("#stalls-note").textContent = n + " stall" + (n === 1 ? "" : "s") + " of " + S.minMs + " ms or longer (" + S.mode +
      " mode): stretches in which a thread ran without a break, " + S.what + ". Each lists where the thread was (its innermost frames), heaviest first.";
  }
  if (D.heat.length) {
    $("#heat-file").innerHTML = D.heat.map((h, i) => '<option value="' + i + '">' + esc(h.file) + "</option>").join("");
  }
  if (D.before) {
    const B = D.before.total, A = D.total;
    $("#compare-note").innerHTML = "<b>" + esc(D.title) + "</b> (" + A.calls + " calls, " + (A.tt * U).toFixed(3) + " s) compared with <b>" +
      esc(D.before.title) + "</b> (" + B.calls + " calls, " + (B.tt * U).toFixed(3) + " s): &Delta; is after &minus; before, " +
      "<span class=\"num-bad\">slower</span> or <span class=\"num-good\">faster</span>; the largest change of tottime first.";
    // How the functions were paired: the same key, the same path once the leading directories
    // that differ are replaced (two checkouts), the same name once addresses are masked.
    const P = D.before.paired, lead = P.prefixes.slice(0, 3).map(([a, b]) => "<code>" + esc(a || ".") + "</code> &rarr; <code>" + esc(b || ".") + "</code>");
    $("#compare-note").innerHTML += '<br><span id="paired"><b>Functions paired</b>: ' + P.key + " by key (file, line, name), " + P.path +
      " by path" + (lead.length ? " with " + lead.join(", ") : "") + ", " + P.address + " by name with addresses masked (<code>0x...</code>); <b>" +
      P.before + "</b> only before (gone), <b>" + P.after + "</b> only after (new).</span>";
  }
  const timeView = D.time ? rprofileTimeView({ D, $, esc, link, stdName, Grid, fit, thread }) : null;
  let current = null, currentArg;
  function route() {
    const [view, arg] = (location.hash.slice(1) || "table").split("/");
    const v = view === "f" ? "func" : has[view] ? view : "table";
    for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== "v-" + v;
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.dataset.view === (v === "func" ? "table" : v));
    current = v;
    currentArg = arg;
    // The filter and the count are the tables'.
    const listed = v === "table" || v === "memory" || v === "types" || v === "compare";
    $("#count").textContent = "";
    filter.disabled = regex.disabled = !listed;
    draw();
  }
  function draw() {
    const arg = currentArg;
    if (current === "table") drawTable();
    else if (current === "func") drawFunction(arg === undefined ? -1 : +decodeURIComponent(arg));
    else if (current === "flame") drawFlame();
    else if (current === "lines") drawLines();
    else if (current === "memory") drawMemory();
    else if (current === "types") drawTypes(arg === undefined ? undefined : decodeURIComponent(arg));
    else if (current === "stalls") drawStalls();
    else if (current === "time") timeView.draw();
    else if (current === "compare") drawCompare();
  }
  let timer = 0;
  filter.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => draw(), 120); });
  regex.addEventListener("change", () => draw());
  strip.addEventListener("change", () => draw());
  threadSel.addEventListener("change", () => draw());
  $("#heat-file").addEventListener("change", () => drawLines());
  $("#flame-search").addEventListener("input", () => searchFlame());
  window.addEventListener("hashchange", route);
  // The page's own links ("#flame", "#f/12") route here. In a notebook the page is an iframe's
  // srcdoc, whose relative links resolve against the notebook's URL: followed, they would load
  // the notebook into the frame. Setting the fragment is a same-page step in both (and in the
  // browser's history, so back works).
  document.addEventListener("click", (e) => {
    const a = e.target.closest ? e.target.closest('a[href^="#"]') : null;
    const modified = e.ctrlKey || e.metaKey || e.shiftKey || e.altKey;
    if (!a || e.button !== 0 || (modified && location.protocol !== "about:")) return;
    e.preventDefault();
    const hash = a.getAttribute("href");
    if (location.hash === hash) route(); else location.hash = hash;
  });
  window.addEventListener("resize", () => { for (const g of [mainGrid, memGrid, typeGrid, cmpGrid, heatGrid]) if (g) g.draw(); });
  route();
  window.rprofileReady = performance.now();
  document.body.dataset.ready = "1";
})();
