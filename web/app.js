// app.js: gemmtune's status page. Reads the coordinator's JSON API (runs,
// workers, one run's per-GEMM bests and best-time timeline), follows a
// running run through its event stream (/v1/runs/{id}/events, read with
// fetch so that a bearer token can be sent), and polls the lists. Plain
// DOM: every value from the server goes in as text, never as markup, since
// GEMM labels and host names come from submitted logs and workers.
'use strict';

const LIST_POLL_MS = 3000;     // runs and workers
const DETAIL_MIN_MS = 2000;    // at most one detail reload per this, while running
const COLORS = ['#2f6fdf', '#1f9d55', '#d98a00', '#d1433f', '#8a4fd6', '#0f9bb0', '#c0508a',
                '#6f7d1c'];
const MAX_LINES = 8;           // GEMMs drawn together on the timeline
const SVG = 'http://www.w3.org/2000/svg';

const state = {
  token: sessionStorage.getItem('gemmtune-token') || '',
  runId: null,       // the selected run
  run: null,         // its GET /v1/runs/{id}
  timeline: null,    // its GET /v1/runs/{id}/timeline
  gemm: null,        // problem_id followed on the timeline, or null for all
  stream: null,      // AbortController of the open event stream
  detailAt: 0,       // when the detail was last loaded
  detailTimer: null,
};

// ------------------------------------------------------------ helpers

const $ = (id) => document.getElementById(id);

// el('td', {class: 'num'}, 'text', child...): an element with text children.
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

const num = (v) => typeof v === 'number' && isFinite(v);
const fmt = (v, d = 2) => (num(v) ? v.toFixed(d) : '–');
const fmtUplift = (v) => (num(v) ? v.toFixed(2) + '×' : '–');
const fmtPct = (v) => (num(v) ? (100 * v).toFixed(1) + ' %' : '–');

// Microseconds with three significant digits, e.g. 12.3, 456, 7890.
function fmtUs(v) {
  if (!num(v)) return '–';
  if (v >= 1000) return Math.round(v).toString();
  return v.toPrecision(3);
}

function fmtDuration(s) {
  if (!num(s)) return '–';
  if (s > 0 && s < 10 && s !== Math.round(s)) return `${s.toFixed(1)} s`;
  s = Math.max(0, Math.round(s));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  if (h) return `${h} h ${m} min`;
  if (m) return `${m} min ${sec} s`;
  return `${sec} s`;
}

function fmtTime(ms) {
  if (!num(ms)) return '–';
  const d = new Date(ms);
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit',
                                       minute: '2-digit' });
}

function badge(s) { return el('span', { class: `badge s-${s}` }, s || '?'); }

function progressBar(p, done, big) {
  const fill = el('div', { class: 'fill' + (done ? ' done' : '') });
  fill.style.width = `${Math.round(1000 * Math.min(1, Math.max(0, p || 0))) / 10}%`;
  return el('div', { class: 'bar' + (big ? ' big' : '') }, fill);
}

function headers() {
  return state.token ? { Authorization: `Bearer ${state.token}` } : {};
}

class Unauthorized extends Error {}

async function api(path) {
  const r = await fetch(path, { headers: headers(), cache: 'no-store' });
  if (r.status === 401) throw new Unauthorized(path);
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

function showError(e) {
  if (e instanceof Unauthorized) {
    $('auth').hidden = false;
    $('error').hidden = true;
    return;
  }
  $('error').textContent = `Cannot reach the coordinator: ${e.message}`;
  $('error').hidden = false;
}

// ------------------------------------------------------------ lists

function renderRuns(runs) {
  const tb = $('runs').tBodies[0];
  tb.replaceChildren();
  $('runs-empty').hidden = runs.length > 0;
  for (const r of [...runs].reverse()) {
    const tr = el('tr', { 'data-run': r.id },
      el('td', { class: 'num' }, r.id),
      el('td', {}, r.name || ''),
      el('td', {}, badge(r.state)),
      el('td', {}, r.backend || ''),
      el('td', {}, r.device_model || '–'),
      el('td', { class: 'num' }, `${r.problems_done}/${r.problems}`),
      el('td', {}, el('div', { class: 'progress' }, progressBar(r.progress, r.state === 'done'),
                      el('span', { class: 'pct' }, fmtPct(r.progress)))),
      el('td', {}, fmtTime(r.created_ms)));
    if (r.id === state.runId) tr.classList.add('selected');
    tr.addEventListener('click', () => selectRun(r.id));
    tb.append(tr);
  }
}

function renderWorkers(workers) {
  const tb = $('workers').tBodies[0];
  tb.replaceChildren();
  const shown = workers.filter((w) => w.state !== 'gone');
  $('workers-empty').hidden = shown.length > 0;
  for (const w of shown) {
    tb.append(el('tr', { 'data-worker': w.id },
      el('td', { class: 'num' }, w.id),
      el('td', {}, w.host),
      el('td', {}, `${w.device_model} #${w.device_index}`),
      el('td', {}, w.backend),
      el('td', {}, badge(w.state)),
      el('td', { class: 'num' }, `${fmt(w.heartbeat_age_s, 1)} s ago`),
      el('td', { class: 'num' }, w.results)));
  }
}

async function refreshLists() {
  try {
    const [runs, workers] = await Promise.all([api('/v1/runs'), api('/v1/workers')]);
    $('error').hidden = true;
    $('auth').hidden = true;
    renderRuns(runs.runs);
    renderWorkers(workers.workers);
    $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
    if (state.runId === null && runs.runs.length) {
      const running = runs.runs.filter((r) => r.state === 'running');
      // the list is newest first (GET /v1/runs pages from the newest run)
      const pick = (running.length ? running : runs.runs)[0];
      selectRun(pick.id);
    }
  } catch (e) {
    showError(e);
  }
}

// ------------------------------------------------------------ one run

function fact(name, value) { return el('div', {}, el('dt', {}, name), el('dd', {}, value)); }

function renderSummary(s) {
  $('run-title').textContent = `Run ${s.id}${s.name ? ' · ' + s.name : ''}`;
  const bar = $('run-bar');
  bar.style.width = `${Math.round(1000 * (s.progress || 0)) / 10}%`;
  bar.classList.toggle('done', s.state === 'done');
  const c = s.candidates || {}, p = s.problems || {};
  $('run-facts').replaceChildren(
    fact('state', badge(s.state)),
    fact('progress', fmtPct(s.progress)),
    fact('GEMMs done', `${p.done ?? '–'} / ${p.total ?? '–'}`),
    fact('candidates measured', `${c.done ?? '–'} / ${c.total ?? '–'}`),
    fact('valid', `${c.valid ?? '–'}`),
    fact('workload speed-up', fmtUplift(s.weighted_uplift)),
    fact('elapsed', fmtDuration(s.elapsed_s)),
    fact('ETA', s.state === 'running' ? fmtDuration(s.eta_s) : '–'));
}

// The per-GEMM table, from the timeline's problems (the same bests as
// GET /v1/runs/{id}, from cheaper queries).
function renderGemms(tl) {
  const tb = $('gemms').tBodies[0];
  tb.replaceChildren();
  for (const b of tl.problems) {
    const tr = el('tr', { 'data-problem': b.problem_id },
      el('td', { class: 'label' }, b.label),
      el('td', { class: 'num' }, b.calls),
      el('td', { class: 'num' }, fmtPct(b.weight)),
      el('td', { class: 'num' }, fmtUs(b.baseline_us)),
      el('td', { class: 'num' }, fmtUs(b.time_us)),
      el('td', { class: 'num uplift' }, fmtUplift(b.uplift)),
      el('td', {}, badge(b.state), b.phase ? ` ${b.phase}` : ''));
    if (b.problem_id === state.gemm) tr.classList.add('selected');
    tr.addEventListener('click', () => {
      state.gemm = state.gemm === b.problem_id ? null : b.problem_id;
      renderGemms(state.timeline);
      renderTimeline(state.timeline);
    });
    tb.append(tr);
  }
}

// Horizontal bars, one per GEMM (heaviest first), with the 1× line.
function renderUplift(tl) {
  const rows = tl.problems.filter((b) => num(b.uplift));
  const box = $('chart-uplift');
  if (!rows.length) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No GEMM has a tuned time yet.'));
    return;
  }
  const W = 560, left = 210, right = 56, rowH = 20, top = 8;
  const H = top + rows.length * rowH + 22;
  const max = Math.max(1.1, ...rows.map((b) => b.uplift)) * 1.05;
  const x = (v) => left + (W - left - right) * (v / max);
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'uplift per GEMM' });
  rows.forEach((b, i) => {
    const y = top + i * rowH;
    const name = b.label.length > 32 ? b.label.slice(0, 31) + '…' : b.label;
    const t = svg('text', { x: left - 6, y: y + 13, 'text-anchor': 'end' }, name);
    t.append(svg('title', {}, b.label));
    g.append(t);
    g.append(svg('rect', { x: left, y: y + 3, height: rowH - 6, width: Math.max(1, x(b.uplift) - left),
                           class: b.uplift > 1.005 ? 'bar-up' : 'bar-flat' }));
    g.append(svg('text', { x: x(b.uplift) + 4, y: y + 13 }, fmtUplift(b.uplift)));
  });
  const base = top + rows.length * rowH;
  g.append(svg('line', { x1: x(1), x2: x(1), y1: top - 4, y2: base + 2, class: 'ref' }));
  g.append(svg('text', { x: x(1), y: base + 16, 'text-anchor': 'middle', class: 'tick' }, '1× (baseline)'));
  box.replaceChildren(g);
}

// Step lines of the best time found per GEMM against seconds since the run
// started: relative to each baseline for all GEMMs, in µs for one.
function renderTimeline(tl) {
  const box = $('chart-timeline');
  if (!tl) { box.replaceChildren(); return; }
  const one = state.gemm !== null;
  let probs = tl.problems.filter((p) => p.points.length && (one ? p.problem_id === state.gemm
                                                                : num(p.baseline_us)));
  if (!one) probs = probs.slice(0, MAX_LINES);
  $('timeline-caption').textContent = one && probs.length
    ? `Best time found (µs) over tuning time: ${probs[0].label}`
    : 'Best time found, relative to the baseline, over tuning time (heaviest GEMMs)';
  if (!probs.length) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No valid result yet.'));
    return;
  }
  const t0 = tl.started_ms ?? tl.created_ms;
  const tEnd = tl.finished_ms ?? Date.now();
  const yOf = (p, v) => (one ? v : v / p.baseline_us);
  let lo = Infinity, hi = -Infinity;
  for (const p of probs) {
    for (const [, v] of p.points) { lo = Math.min(lo, yOf(p, v)); hi = Math.max(hi, yOf(p, v)); }
    if (num(p.baseline_us)) { const b = yOf(p, p.baseline_us); lo = Math.min(lo, b); hi = Math.max(hi, b); }
  }
  if (!(hi > lo)) { hi = lo * 1.1 + 1e-9; lo = lo * 0.9; }
  const pad = (hi - lo) * 0.08; lo = Math.max(0, lo - pad); hi += pad;
  const W = 560, H = 260, L = 52, R = 12, T = 10, B = 34;
  const span = Math.max(1, tEnd - t0);
  const X = (t) => L + (W - L - R) * Math.min(1, Math.max(0, (t - t0) / span));
  const Y = (v) => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'best time over tuning time' });
  g.append(svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'axis' }));
  g.append(svg('line', { x1: L, x2: L, y1: T, y2: H - B, class: 'axis' }));
  for (let i = 0; i <= 4; i++) {
    const v = lo + (hi - lo) * i / 4;
    g.append(svg('text', { x: L - 5, y: Y(v) + 4, 'text-anchor': 'end', class: 'tick' },
                 one ? fmtUs(v) : v.toFixed(2)));
    const t = span * i / 4;
    g.append(svg('text', { x: X(t0 + t), y: H - B + 15, 'text-anchor': 'middle', class: 'tick' },
                 fmtDuration(t / 1000)));
  }
  g.append(svg('text', { x: W - R, y: H - 4, 'text-anchor': 'end', class: 'tick' }, 'since the run started'));
  const refY = one ? (num(probs[0].baseline_us) ? probs[0].baseline_us : null) : 1;
  if (refY !== null) {
    g.append(svg('line', { x1: L, x2: W - R, y1: Y(refY), y2: Y(refY), class: 'ref' }));
    g.append(svg('text', { x: W - R - 2, y: Y(refY) - 4, 'text-anchor': 'end', class: 'tick' }, 'baseline'));
  }
  probs.forEach((p, i) => {
    let d = '';
    p.points.forEach(([t, v], k) => {
      const px = X(t).toFixed(1), py = Y(yOf(p, v)).toFixed(1);
      d += k ? ` H${px} V${py}` : `M${px} ${py}`;
    });
    d += ` H${X(tEnd).toFixed(1)}`;
    const path = svg('path', { d, fill: 'none', stroke: COLORS[i % COLORS.length], 'stroke-width': 2 });
    path.append(svg('title', {}, p.label));
    g.append(path);
  });
  const legend = el('div', { class: 'muted' });
  if (!one) {
    probs.forEach((p, i) => {
      const sw = el('span', {}, '■ ');
      sw.style.color = COLORS[i % COLORS.length];
      legend.append(el('span', {}, sw, p.label, '  '));
    });
  }
  box.replaceChildren(g, legend);
}

// Loads the selected run: its summary (GET /v1/runs/{id}) when full, and
// its timeline, which carries the per-GEMM bests for the table and charts.
async function loadDetail(full) {
  const id = state.runId;
  if (id === null) return;
  state.detailAt = Date.now();
  try {
    const [run, tl] = await Promise.all([full || !state.run ? api(`/v1/runs/${id}`) : null,
                                         api(`/v1/runs/${id}/timeline`)]);
    if (id !== state.runId) return;
    if (run) {
      state.run = run;
      renderSummary(run);
    }
    state.timeline = tl;
    $('run-card').hidden = false;
    renderGemms(tl);
    renderUplift(tl);
    renderTimeline(tl);
    if (state.run.state === 'running' && !state.stream) follow(id);
  } catch (e) {
    showError(e);
  }
}

// A timeline reload soon, but not more often than DETAIL_MIN_MS.
function scheduleDetail() {
  if (state.detailTimer) return;
  const wait = Math.max(0, state.detailAt + DETAIL_MIN_MS - Date.now());
  state.detailTimer = setTimeout(() => { state.detailTimer = null; loadDetail(false); }, wait);
}

// Reads the run's event stream; a progress event updates the summary at
// once and the tables soon after; the end event (or a broken stream) stops
// it, and the list polling keeps the page current.
async function follow(id) {
  const ctl = new AbortController();
  state.stream = ctl;
  try {
    const r = await fetch(`/v1/runs/${id}/events`, { headers: headers(), signal: ctl.signal,
                                                     cache: 'no-store' });
    if (!r.ok || !r.body) throw new Error(`events: HTTP ${r.status}`);
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = 'message', data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data += line.slice(5).trim();
        }
        if (!data || id !== state.runId) continue;
        const s = JSON.parse(data);
        if (event === 'progress') {
          state.run = Object.assign(state.run || {}, s);
          renderSummary(state.run);
          scheduleDetail();
        }
        if (event === 'end') {
          ctl.abort();
          state.stream = null;
          loadDetail(true);
        }
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') console.warn('event stream', e);
  } finally {
    if (state.stream === ctl) state.stream = null;
  }
}

function selectRun(id) {
  if (state.stream) { state.stream.abort(); state.stream = null; }
  state.runId = id;
  state.run = null;
  state.gemm = null;
  history.replaceState(null, '', `#run=${id}`);
  for (const tr of $('runs').tBodies[0].rows)
    tr.classList.toggle('selected', Number(tr.dataset.run) === id);
  loadDetail(true);
}

// ------------------------------------------------------------ start

$('auth').addEventListener('submit', (ev) => {
  ev.preventDefault();
  state.token = $('token').value.trim();
  sessionStorage.setItem('gemmtune-token', state.token);
  refreshLists();
  loadDetail(true);
});

const m = /run=(\d+)/.exec(location.hash);
if (m) selectRun(Number(m[1]));
fetch('/healthz', { cache: 'no-store' }).then((r) => r.json())
  .then((h) => { $('version').textContent = `v${h.version}`; }).catch(() => {});
refreshLists();
setInterval(refreshLists, LIST_POLL_MS);
// Without an open event stream (it broke, or the limit of streams was
// reached) a running run is polled instead, and the stream tried again.
setInterval(() => {
  if (state.run && state.run.state === 'running' && !state.stream) loadDetail(true);
}, 10000);
