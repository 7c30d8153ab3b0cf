// hypeedit-review: one candidate at a time, keyboard first, nothing typed is ever lost.
//
// Every verdict goes into a queue kept in localStorage *before* it is sent; it
// leaves the queue only when the server says it is on disk.  If the tab, the
// browser or the server dies, the queue is resent on the next load (same
// origin: restart the server on the same port).
"use strict";

const $ = (id) => document.getElementById(id);
let S = null;                 // the server's state: tasks, items (aliases and opaque ids only)
let items = [];
const byId = new Map();
let current = null;           // id of the item on screen
let flipped = false, flipRef = 0;
let queue = [], undoStack = [];
const drafts = new Map();     // item id -> a note typed before its verdict (it goes with the verdict)
let inflight = false, retryTimer = null, backoff = 500, lastError = null;
let timerStart = performance.now(), hiddenMs = 0, hiddenSince = null;

const key = (name) => `hypeedit-review:${S.store_key}:${name}`;
const load = (name, fallback) => { try { return JSON.parse(localStorage.getItem(key(name))) ?? fallback; } catch { return fallback; } };
const save = (name, value) => localStorage.setItem(key(name), JSON.stringify(value));
const newOpId = () => (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);
const pad3 = (n) => String(n).padStart(3, "0");

// ------------------------------------------------------------------ time spent (visible time only)
function resetTimer() { timerStart = performance.now(); hiddenMs = 0; hiddenSince = document.hidden ? timerStart : null; }
document.addEventListener("visibilitychange", () => {
  if (document.hidden) hiddenSince = performance.now();
  else if (hiddenSince !== null) { hiddenMs += performance.now() - hiddenSince; hiddenSince = null; }
});
function elapsedMs() {
  const now = performance.now();
  const hidden = hiddenMs + (hiddenSince !== null ? now - hiddenSince : 0);
  return Math.max(0, Math.round(now - timerStart - hidden));
}

// ------------------------------------------------------------------ loading
async function start() {
  for (;;) {
    try {
      const response = await fetch("/api/state", { cache: "no-store" });
      if (response.ok) { S = await response.json(); break; }
    } catch (e) { /* server not up yet */ }
    $("progress").textContent = "server unreachable, retrying…";
    await new Promise((r) => setTimeout(r, 1000));
  }
  items = S.items;
  items.forEach((it) => byId.set(it.id, it));
  queue = load("queue", []).filter((op) => byId.has(op.item));
  undoStack = load("undo", []).filter((u) => byId.has(u.item));
  queue.forEach((op) => { const it = byId.get(op.item); it.verdict = op.verdict; it.ms = op.ms; it.note = op.note ?? null; });
  $("note").addEventListener("change", noteChanged);
  // The buttons do what P and F do; each gives the focus back, so Space (flip) never presses one again.
  for (const [id, verdict] of [["button-pass", "PASS"], ["button-fail", "FAIL"]]) {
    $(id).addEventListener("click", (e) => { e.currentTarget.blur(); judge(verdict); });
  }
  setupFilters();
  current = firstUnlabelled(view(false)) ?? (view(false)[0] || {}).id ?? null;
  resetTimer();
  render();
  flush();
}

function setupFilters() {
  const add = (select, values) => values.forEach((v) => select.add(new Option(v, v)));
  add($("filter-type"), S.task_types);
  add($("filter-alias"), S.aliases);
  const saved = load("filters", {});
  $("filter-type").value = S.task_types.includes(saved.type) ? saved.type : "";
  $("filter-alias").value = S.aliases.includes(saved.alias) ? saved.alias : "";
  $("filter-unlabelled").checked = !!saved.unlabelled;
  for (const id of ["filter-type", "filter-alias", "filter-unlabelled"]) {
    $(id).addEventListener("change", (e) => { e.target.blur(); filtersChanged(); });
  }
}

function filtersChanged() {
  save("filters", { type: $("filter-type").value, alias: $("filter-alias").value, unlabelled: $("filter-unlabelled").checked });
  const v = view(false);
  current = firstUnlabelled(v) ?? (v[0] || {}).id ?? null;
  $("done").hidden = true;
  resetTimer();
  render();
}

// ------------------------------------------------------------------ the filtered view
function matches(it) {
  const type = $("filter-type").value, alias = $("filter-alias").value;
  return (!type || S.tasks[it.task].types.includes(type)) && (!alias || it.alias === alias)
    && (!$("filter-unlabelled").checked || it.verdict == null);
}
// keepCurrent: the item on screen stays in the view even once labelled, so arrows work from it.
function view(keepCurrent = true) { return items.filter((it) => matches(it) || (keepCurrent && it.id === current)); }
function firstUnlabelled(v) { return (v.find((it) => it.verdict == null) || {}).id ?? null; }

function nextUnlabelledAfter(id) {
  const v = view(), start = v.findIndex((it) => it.id === id);
  for (let step = 1; step <= v.length; step++) {
    const it = v[(start + step) % v.length];
    if (it.verdict == null && it.id !== id) return it.id;
  }
  return null;
}

function move(delta) {
  const v = view();
  if (!v.length) return;
  const index = Math.max(0, v.findIndex((it) => it.id === current));
  show(v[(index + delta + v.length) % v.length].id);
}

function show(id) {
  if (id === null) return;
  if (id !== current) { flipped = false; flipRef = 0; resetTimer(); }
  current = id;
  render();
}

// ------------------------------------------------------------------ verdicts, undo, the queue
function judge(verdict) {
  const it = byId.get(current);
  if (!it) return;
  undoStack.push({ item: it.id, verdict: it.verdict ?? null, ms: it.ms ?? null, note: it.note ?? null });
  save("undo", undoStack.slice(-200));
  setVerdict(it, verdict, elapsedMs(), noteText());
  drafts.delete(it.id);
  const next = nextUnlabelledAfter(it.id);
  $("done").hidden = next !== null;
  if (next !== null) show(next); else render();
}

function undo() {
  const last = undoStack.pop();
  save("undo", undoStack);
  if (!last) return;
  setVerdict(byId.get(last.item), last.verdict, last.ms ?? 0, last.note ?? null);
  $("done").hidden = true;
  show(last.item);
}

function setVerdict(it, verdict, ms, note) {
  it.verdict = verdict;
  it.ms = verdict == null ? null : ms;
  it.note = verdict == null ? null : note;
  queue.push({ op: newOpId(), item: it.id, verdict, ms: it.ms, note: it.note });
  save("queue", queue);   // in the browser's storage before it goes on the wire
  flush();
}

async function flush() {
  clearTimeout(retryTimer);
  if (inflight || !queue.length) { showStatus(); return; }
  inflight = true;
  showStatus();
  const batch = queue.slice(0, 100);
  try {
    const response = await fetch("/api/verdicts", { method: "POST", cache: "no-store",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ ops: batch }) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const result = await response.json();
    result.rejected.forEach((r) => console.warn("verdict not accepted by the server:", r));
    const settled = new Set([...result.acked, ...result.rejected.map((r) => r.op)]);
    queue = queue.filter((op) => !settled.has(op.op));
    save("queue", queue);
    lastError = null; backoff = 500;
  } catch (error) {
    lastError = error;
    retryTimer = setTimeout(flush, backoff);
    backoff = Math.min(5000, backoff * 2);
  } finally {
    inflight = false;
  }
  showStatus();
  if (queue.length && !lastError) flush();
}
window.addEventListener("online", flush);

// ------------------------------------------------------------------ notes
function noteText() { const text = $("note").value.trim(); return text ? text : null; }

// A note edited after the verdict: the same verdict is sent again with the new note.
function noteChanged() {
  const it = byId.get(current);
  if (!it) return;
  if (it.verdict == null) { drafts.set(it.id, $("note").value); return; }
  if ((it.note ?? null) !== noteText()) setVerdict(it, it.verdict, it.ms ?? 0, noteText());
}

function showStatus() {
  const el = $("save-status");
  document.body.dataset.pending = String(queue.length);
  if (!queue.length) { el.className = "ok"; el.textContent = "all verdicts saved"; return; }
  el.className = lastError ? "error" : "pending";
  el.textContent = lastError
    ? `${queue.length} unsaved: server unreachable, retrying (kept in this browser)`
    : `${queue.length} unsaved: sending…`;
}

// ------------------------------------------------------------------ drawing
function render() {
  const it = byId.get(current);
  document.body.dataset.item = current ?? "";
  const labelled = items.filter((x) => x.verdict != null).length;
  $("progress").textContent = `${labelled} / ${items.length} labelled`;
  if (!it) { $("position").textContent = "nothing to show with these filters"; return; }
  const v = view(), task = S.tasks[it.task];
  $("position").textContent = `item ${v.findIndex((x) => x.id === current) + 1} of ${v.length} in view`;
  $("meta").textContent = `${it.alias} · task ${it.task} · candidate ${pad3(it.repeat)} · ${task.types.join(", ")}`;
  $("instruction").textContent = task.instruction;
  drawRefs(task);
  drawStage(it, task);
  if (document.activeElement !== $("note")) $("note").value = it.note ?? drafts.get(it.id) ?? "";
  $("verdict").textContent = it.verdict ?? "";
  $("verdict").className = it.verdict ?? "";
  preload(v[(v.findIndex((x) => x.id === current) + 1) % v.length]);
  showStatus();
}

function drawRefs(task) {
  const box = $("refs"), banner = $("refs-missing");
  box.replaceChildren();
  banner.hidden = !task.refs_missing;
  banner.textContent = task.refs_missing
    ? `${task.refs_missing} of ${task.refs.length + task.refs_missing} reference images of this task are missing: `
      + "do not label it until they are found (fix --images-base)" : "";
  if (!task.refs.length) { box.textContent = "reference images unavailable"; return; }
  task.refs.forEach((ref, i) => {
    const fig = document.createElement("figure"), img = new Image(), cap = document.createElement("figcaption");
    img.src = `/img/${ref}`; img.alt = `reference ${i + 1}`;
    cap.textContent = `reference ${i + 1}`;
    if (i === flipRef) fig.className = "flip-target";
    fig.append(img, cap);
    box.append(fig);
  });
}

function drawStage(it, task) {
  const cand = $("stage-candidate"), ref = $("stage-reference");
  const refId = task.refs[Math.min(flipRef, task.refs.length - 1)];
  if (cand.dataset.src !== it.image) {
    cand.dataset.src = it.image; $("stage-missing").hidden = true; cand.src = `/img/${it.image}`;
  }
  if (refId && ref.dataset.src !== refId) { ref.dataset.src = refId; ref.src = `/img/${refId}`; }
  const showRef = flipped && !!refId;
  cand.hidden = showRef; ref.hidden = !showRef;
  $("stage").classList.toggle("flipped", showRef);
  $("stage-label").textContent = showRef ? `REFERENCE ${flipRef + 1}` : "CANDIDATE";
  cand.onerror = () => { $("stage-missing").hidden = false; };
  cand.onload = () => { $("stage-missing").hidden = true; };
}

function preload(it) {
  if (!it) return;
  new Image().src = `/img/${it.image}`;
  S.tasks[it.task].refs.forEach((ref) => { new Image().src = `/img/${ref}`; });
}

// ------------------------------------------------------------------ keyboard
const KEYS = {
  p: () => judge("PASS"), f: () => judge("FAIL"), u: undo,
  ArrowRight: () => move(1), ArrowLeft: () => move(-1), n: () => show(nextUnlabelledAfter(current)),
  o: () => { flipped = !flipped; render(); }, " ": () => { flipped = !flipped; render(); },
};
document.addEventListener("keydown", (e) => {
  if (!S || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.target === $("note")) { if (e.key === "Escape") $("note").blur(); return; }  // typing a note
  if (e.key === "c" || e.key === "C") { e.preventDefault(); $("note").focus(); return; }
  if (e.target instanceof HTMLSelectElement && e.key.startsWith("Arrow")) return;
  const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (/^[1-9]$/.test(k)) {
    const task = byId.get(current) && S.tasks[byId.get(current).task];
    if (task && Number(k) <= task.refs.length) { flipRef = Number(k) - 1; flipped = true; render(); }
    e.preventDefault();
    return;
  }
  if (KEYS[k]) { e.preventDefault(); if (!e.repeat || k.startsWith("Arrow")) KEYS[k](); }
});

start();
