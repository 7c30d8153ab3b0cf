/* The failure browser of pytest-hypeedit's HTML report.
 *
 * Renders task cards from the JSON in #hx-data a few at a time as the reader scrolls: one card per
 * task (its instruction, type and references), a row per model with every repeat as a thumbnail
 * and its badge. Filters, the current task and the open candidate live in the address's hash, so
 * a copied link opens the same view. Every string from the data goes into the DOM as text
 * (textContent, attributes set one by one): nothing from a record is parsed as markup.
 */
(function () {
  'use strict';
  var DATA = JSON.parse(document.getElementById('hx-data').textContent);
  var CHUNK = 6;           // task cards drawn at a time
  var EAGER = 2;           // the first cards' images load with the page, not when scrolled to: the reader starts there
  var LABELS = {pass: 'PASS', fail: 'FAIL', refused: 'refused', error: 'error', skipped: 'skipped'};
  var GROUPS = [           // [hash key, title, values, label of a value]
    ['model', 'Model', DATA.models, function (v) { return v; }],
    ['split', 'Split', DATA.splits, function (v) { return v; }],
    ['type', 'Task type', DATA.types, function (v) { return v; }],
    ['outcome', 'Outcome', DATA.outcomes, function (v) { return LABELS[v] || v; }],
    ['flag', 'Diagnostics', DATA.flags.map(function (f) { return f[0]; }), flagLabel]
  ];
  var SORTS = [['task', 'task order'], ['worst', 'fewest passes first'], ['differ', 'models differ most']];
  if (DATA.baseline) SORTS.unshift(['regressed', 'got worse against the baseline first']);
  var DEFAULT_SORT = SORTS[0][0];  // with a baseline, the tasks that got worse come first
  var MODES = [['side', 'Side by side'], ['slider', 'Slider'], ['flip', 'Flip (f)'], ['diff', 'Difference']];
  var compare = {mode: 'side', flipped: false};  // how the viewer sets a candidate against the baseline's

  var state = emptyState();
  var shown = [];          // filtered task groups: {task, key, rows: [row]}
  var drawn = 0;           // how many of them have a card in the page
  var byKey = {};          // candidate key -> {row, cand}
  var list = document.getElementById('hx-list');
  var more = document.getElementById('hx-more');
  var status = document.getElementById('hx-status');
  var viewer = document.getElementById('hx-viewer');

  DATA.rows.forEach(function (row) {
    row.c.forEach(function (cand) { byKey[candKey(row, cand)] = {row: row, cand: cand}; });
  });

  function emptyState() {
    return {model: [], split: [], type: [], outcome: [], flag: [], sort: DEFAULT_SORT, task: null, open: null};
  }
  function flagLabel(key) {
    for (var i = 0; i < DATA.flags.length; i++) if (DATA.flags[i][0] === key) return DATA.flags[i][1];
    return key;
  }
  function taskOf(row) { return DATA.tasks[row.t]; }
  function modelOf(row) { return DATA.models[row.m]; }
  function candKey(row, cand) { return taskOf(row).key + '/' + modelOf(row) + '/' + cand.r; }

  // ------------------------------------------------------------------ DOM helpers (text only)

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) return;
      if (name === 'text') node.textContent = value;
      else if (name === 'cls') node.className = value;
      else node.setAttribute(name, value);
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  // ------------------------------------------------------------------ the address keeps the view

  function readHash() {
    var params = new URLSearchParams(window.location.hash.replace(/^#/, ''));
    var next = emptyState();
    GROUPS.forEach(function (g) {
      var raw = params.get(g[0]);
      next[g[0]] = raw ? raw.split(',').filter(function (v) { return g[2].indexOf(v) >= 0; }) : [];
    });
    var sort = params.get('sort');
    if (SORTS.some(function (s) { return s[0] === sort; })) next.sort = sort;
    next.task = params.get('task');
    next.open = byKey[params.get('open')] ? params.get('open') : null;
    if (next.open && !next.task) next.task = taskOf(byKey[next.open].row).key;
    return next;
  }

  function writeHash() {
    var params = new URLSearchParams();
    GROUPS.forEach(function (g) { if (state[g[0]].length) params.set(g[0], state[g[0]].join(',')); });
    if (state.sort !== DEFAULT_SORT) params.set('sort', state.sort);
    if (state.task) params.set('task', state.task);
    if (state.open) params.set('open', state.open);
    var hash = params.toString();
    var url = window.location.pathname + window.location.search + (hash ? '#' + hash : '');
    if (url !== window.location.pathname + window.location.search + window.location.hash) {
      window.history.replaceState(window.history.state, '', url);
    }
  }

  // ------------------------------------------------------------------ filters

  function candidateFilters() { return state.outcome.length || state.flag.length; }

  function matches(cand) {
    if (state.outcome.length && state.outcome.indexOf(cand.o) < 0) return false;
    if (state.flag.length && !state.flag.every(function (f) { return (cand.flags || []).indexOf(f) >= 0; })) return false;
    return true;
  }

  function rowShown(row) {
    var task = taskOf(row);
    if (state.model.length && state.model.indexOf(modelOf(row)) < 0) return false;
    if (state.split.length && state.split.indexOf(task.split) < 0) return false;
    if (state.type.length && !task.types.some(function (t) { return state.type.indexOf(t) >= 0; })) return false;
    return !candidateFilters() || row.c.some(matches);
  }

  function computeShown() {
    var groups = {}, order = [];
    DATA.rows.forEach(function (row) {
      if (!rowShown(row)) return;
      if (!groups[row.t]) { groups[row.t] = {task: taskOf(row), key: taskOf(row).key, rows: []}; order.push(row.t); }
      groups[row.t].rows.push(row);
    });
    shown = order.map(function (t) { return groups[t]; });
    if (state.sort === 'worst') shown.sort(function (a, b) { return passShare(a) - passShare(b); });
    if (state.sort === 'differ') shown.sort(function (a, b) { return spread(b) - spread(a); });
    if (state.sort === 'regressed') shown.sort(function (a, b) { return change(a) - change(b); });
  }
  function change(group) {  // the largest fall of a model's pass share against its baseline (0: none)
    var worst = 0;
    group.rows.forEach(function (r) {
      if (r.b && r.b.judged) worst = Math.min(worst, share(r) - r.b.pass / r.b.judged);
    });
    return worst;
  }
  function share(row) { return row.judged ? row.pass / row.judged : 0; }
  function passShare(group) {
    var pass = 0, judged = 0;
    group.rows.forEach(function (r) { pass += r.pass; judged += r.judged; });
    return judged ? pass / judged : 0;
  }
  function spread(group) {
    var shares = group.rows.map(share);
    return shares.length ? Math.max.apply(null, shares) - Math.min.apply(null, shares) : 0;
  }

  function renderFilters() {
    var box = document.getElementById('hx-filters');
    clear(box);
    GROUPS.forEach(function (g) {
      if (!g[2].length || (g[0] !== 'outcome' && g[0] !== 'flag' && g[2].length < 2)) return;
      var group = el('div', {cls: 'hx-filter', role: 'group', 'aria-label': g[1], 'data-filter': g[0]},
                     el('span', {cls: 'hx-filter-title', text: g[1] + ':'}));
      g[2].forEach(function (value) {
        var on = state[g[0]].indexOf(value) >= 0;
        var chip = el('button', {type: 'button', cls: 'hx-chip', 'aria-pressed': on ? 'true' : 'false',
                                 'data-value': value, text: g[3](value)});
        chip.addEventListener('click', function () { toggle(g[0], value); });
        group.appendChild(chip);
      });
      box.appendChild(group);
    });
    var sort = el('select', {id: 'hx-sort', 'aria-label': 'Order of the tasks'});
    SORTS.forEach(function (s) { sort.appendChild(el('option', {value: s[0], text: s[1], selected: s[0] === state.sort})); });
    sort.addEventListener('change', function () { state.sort = sort.value; refresh(); });
    var clearAll = el('button', {type: 'button', cls: 'hx-clear', text: 'Clear filters'});
    clearAll.addEventListener('click', function () { var t = state.task; state = emptyState(); state.task = t; refresh(); });
    box.appendChild(el('div', {cls: 'hx-filter'}, el('label', {cls: 'hx-filter-title', 'for': 'hx-sort', text: 'Order:'}),
                       sort, clearAll));
  }

  function toggle(group, value) {
    var values = state[group], at = values.indexOf(value);
    if (at >= 0) values.splice(at, 1); else values.push(value);
    refresh();
  }

  // ------------------------------------------------------------------ task cards

  function refresh() {
    computeShown();
    renderFilters();
    clear(list);
    drawn = 0;
    if (state.task && !shown.some(function (g) { return g.key === state.task; })) state.task = null;
    drawUntil(state.task ? indexOfTask(state.task) : 0);
    var rows = 0, cands = 0;
    shown.forEach(function (g) {
      rows += g.rows.length;
      g.rows.forEach(function (r) { cands += candidateFilters() ? r.c.filter(matches).length : r.c.length; });
    });
    status.textContent = shown.length ? 'Showing ' + shown.length + ' tasks, ' + rows + ' model rows, ' + cands +
      ' candidates' + (candidateFilters() ? ' that match (the others are dimmed)' : '') + '.'
      : 'No task matches these filters.';
    markCurrent();
    writeHash();
  }

  function indexOfTask(key) {
    for (var i = 0; i < shown.length; i++) if (shown[i].key === key) return i;
    return -1;
  }

  function drawUntil(index) {
    var target = Math.max(index + 1, Math.min(shown.length, drawn + CHUNK));
    while (drawn < target && drawn < shown.length) { list.appendChild(card(shown[drawn], drawn < EAGER)); drawn++; }
    more.textContent = drawn < shown.length ? (shown.length - drawn) + ' more tasks below' : '';
  }

  function card(group, eager) {
    var task = group.task;
    var passes = group.rows.map(function (r) { return r.pass; }).reduce(function (a, b) { return a + b; }, 0);
    var judged = group.rows.map(function (r) { return r.judged; }).reduce(function (a, b) { return a + b; }, 0);
    var head = el('header', {cls: 'hx-task-head'},
      el('span', {cls: 'hx-task-id', text: task.split + ' / ' + task.id}),
      el('span', {cls: 'hx-task-type', text: task.types.join(', ') || 'no type'}),
      el('span', {cls: 'hx-task-count', text: passes + '/' + judged + ' PASS'}));
    var refs = el('div', {cls: 'hx-refs'}, el('div', {cls: 'hx-label', text: task.refs.length > 1 ? 'References' : 'Reference'}));
    task.refs.forEach(function (ref) { refs.appendChild(picture(ref, 'reference ' + (ref.name || ''), 'hx-ref', eager)); });
    var models = el('div', {cls: 'hx-models'});
    group.rows.forEach(function (row) { models.appendChild(modelRow(row, eager)); });
    return el('section', {cls: 'hx-task', 'data-task': task.key, tabindex: '-1'},
      head, el('p', {cls: 'hx-instruction', text: task.instruction || '(no instruction)'}),
      el('div', {cls: 'hx-task-body'}, refs, models));
  }

  function modelRow(row, eager) {
    var strip = el('div', {cls: 'hx-strip'});
    row.c.forEach(function (cand) { strip.appendChild(thumb(row, cand, eager)); });
    return el('div', {cls: 'hx-row', 'data-model': modelOf(row)},
      el('div', {cls: 'hx-row-head'}, el('span', {cls: 'hx-model', text: modelOf(row)}),
         el('span', {cls: 'hx-row-count', text: row.pass + '/' + row.judged + ' PASS'})),
      strip, baselineRow(row, eager));
  }

  function baselineRow(row, eager) {  // the baseline release's repeats of the task, under this run's
    if (!row.b) return null;
    var strip = el('div', {cls: 'hx-strip hx-base-strip'});
    row.b.c.forEach(function (c) {
      var label = (LABELS[c.o] || c.o) + ' ' + c.r;
      strip.appendChild(el('span', {cls: 'hx-base-cand hx-' + c.o, 'data-repeat': c.r, title: 'baseline ' + row.b.m + ', repeat ' + label},
        picture(c.img, 'baseline ' + row.b.m + ' repeat ' + c.r, 'hx-thumb', eager),
        el('span', {cls: 'hx-base-badge hx-badge-' + c.o, text: label})));
    });
    return el('div', {cls: 'hx-base-row'},
      el('div', {cls: 'hx-row-head'}, el('span', {cls: 'hx-base-model', text: 'baseline: ' + row.b.m}),
         el('span', {cls: 'hx-row-count', text: row.b.pass + '/' + row.b.judged + ' PASS'})),
      strip);
  }

  function thumb(row, cand, eager) {
    var key = candKey(row, cand);
    var dim = candidateFilters() && !matches(cand);
    var button = el('button', {type: 'button', cls: 'hx-cand hx-' + cand.o + (dim ? ' hx-dim' : ''), 'data-key': key,
                               'data-outcome': cand.o, title: modelOf(row) + ', repeat ' + cand.r + ': ' + (LABELS[cand.o] || cand.o)},
      picture(cand.img, modelOf(row) + ' repeat ' + cand.r, 'hx-thumb', eager),
      el('span', {cls: 'hx-badge hx-badge-' + cand.o, text: (LABELS[cand.o] || cand.o) + ' ' + cand.r}));
    if ((cand.flags || []).indexOf('disagree') >= 0) button.appendChild(el('span', {cls: 'hx-flag', text: 'humans differ'}));
    button.addEventListener('click', function () { open(key); });
    return button;
  }

  function picture(image, alt, cls, eager) {
    if (!image || !image.src) {
      return el('span', {cls: cls + ' hx-noimage', text: image && image.error ? 'unreadable image' : 'no image'});
    }
    return el('img', {cls: cls, src: image.src, alt: alt, width: image.w || null, height: image.h || null,
                      loading: eager ? 'eager' : 'lazy', decoding: 'async'});
  }

  function markCurrent() {
    Array.prototype.forEach.call(list.querySelectorAll('.hx-current'), function (n) { n.classList.remove('hx-current'); });
    var node = state.task && list.querySelector('[data-task="' + CSS.escape(state.task) + '"]');
    if (node) node.classList.add('hx-current');
    return node;
  }

  function goTask(index) {
    if (!shown.length) return;
    index = Math.max(0, Math.min(shown.length - 1, index));
    drawUntil(index);
    state.task = shown[index].key;
    var node = markCurrent();
    if (node) { node.scrollIntoView({block: 'start'}); node.focus({preventScroll: true}); }
    writeHash();
  }

  function moveTask(step) {
    var at = state.task ? indexOfTask(state.task) : -1;
    goTask(at < 0 ? 0 : at + step);
    if (viewer.open) openFirstOfTask();
  }

  function openFirstOfTask() {
    var group = shown[indexOfTask(state.task)];
    if (!group) return;
    for (var i = 0; i < group.rows.length; i++) {
      var row = group.rows[i];
      var cand = row.c.filter(matches)[0];
      if (cand) { open(candKey(row, cand)); return; }
    }
  }

  // ------------------------------------------------------------------ the viewer

  function sequence() {
    var keys = [];
    shown.forEach(function (g) {
      g.rows.forEach(function (row) { row.c.forEach(function (c) { if (matches(c)) keys.push(candKey(row, c)); }); });
    });
    return keys;
  }

  function step(by) {
    var keys = sequence();
    if (!keys.length) return;
    var at = keys.indexOf(state.open);
    open(keys[(at < 0 ? 0 : at + by + keys.length) % keys.length]);
  }

  function open(key) {
    var found = byKey[key];
    if (!found) return;
    state.open = key;
    state.task = taskOf(found.row).key;
    var at = indexOfTask(state.task);
    if (at >= 0) drawUntil(at);
    markCurrent();
    fillViewer(found.row, found.cand);
    if (!viewer.open) viewer.showModal();
    writeHash();
  }

  function close() {
    if (viewer.open) viewer.close();
  }

  viewer.addEventListener('close', function () {
    var key = state.open;
    state.open = null;
    writeHash();
    var button = key && list.querySelector('[data-key="' + CSS.escape(key) + '"]');
    if (button) button.focus();
  });

  function fillViewer(row, cand) {
    var task = taskOf(row);
    clear(viewer);
    var closeButton = el('button', {type: 'button', cls: 'hx-close', text: 'Close (Esc)'});
    closeButton.addEventListener('click', close);
    var prev = el('button', {type: 'button', cls: 'hx-prev', text: '\u2190 Previous'});
    var next = el('button', {type: 'button', cls: 'hx-next', text: 'Next \u2192'});
    prev.addEventListener('click', function () { step(-1); });
    next.addEventListener('click', function () { step(1); });
    viewer.appendChild(el('header', {cls: 'hx-viewer-head'},
      el('h3', {text: modelOf(row) + ' \u00b7 ' + task.split + ' / ' + task.id + ' \u00b7 repeat ' + cand.r}),
      el('span', {cls: 'hx-badge hx-badge-' + cand.o, text: LABELS[cand.o] || cand.o}), prev, next, closeButton));
    viewer.appendChild(el('p', {cls: 'hx-instruction', text: task.instruction || '(no instruction)'}));
    viewer.appendChild(viewerImages(task, row, cand));
    viewer.appendChild(el('div', {cls: 'hx-viewer-text'}, verdictBlock(cand), humanBlock(cand), factsBlock(cand)));
  }

  function viewerImages(task, row, cand) {
    var box = el('div', {cls: 'hx-viewer-images'});
    task.refs.forEach(function (ref) { box.appendChild(fullFigure(ref, 'reference' + (ref.name ? ' ' + ref.name : ''))); });
    var old = baselineOf(row, cand);
    box.appendChild(old ? compareBlock(row, cand, old) : fullFigure(cand.img, 'candidate, repeat ' + cand.r, cand));
    return box;
  }

  // ------------------------------------------------------------------ against the baseline

  function baselineOf(row, cand) {  // the same repeat where the baseline has it, else its first (as the report)
    if (!row.b || !row.b.c.length) return null;
    for (var i = 0; i < row.b.c.length; i++) if (row.b.c[i].r === cand.r) return row.b.c[i];
    return row.b.c[0];
  }
  function srcOf(image) { return image && (image.view || image.src) || null; }

  function compareBlock(row, cand, old) {
    var oldLabel = 'baseline ' + row.b.m + ', repeat ' + old.r + ' (' + (LABELS[old.o] || old.o) + ')';
    var newLabel = 'this run, repeat ' + cand.r + ' (' + (LABELS[cand.o] || cand.o) + ')';
    var modes = el('div', {cls: 'hx-modes', role: 'group', 'aria-label': 'Compare with the baseline'});
    MODES.forEach(function (m) {
      var button = el('button', {type: 'button', cls: 'hx-mode', 'data-mode': m[0],
                                 'aria-pressed': compare.mode === m[0] ? 'true' : 'false', text: m[1]});
      button.addEventListener('click', function () { setMode(m[0]); });
      modes.appendChild(button);
    });
    var body = {side: sideBySide, slider: slider, flip: flip, diff: difference}[compare.mode](cand, old, newLabel, oldLabel);
    return el('section', {cls: 'hx-compare', 'data-mode': compare.mode},
      el('div', {cls: 'hx-compare-head'}, el('b', {text: 'Against the baseline: '}), modes), body);
  }

  function setMode(mode) {
    compare.mode = mode;
    compare.flipped = false;
    var found = byKey[state.open];
    if (found) fillViewer(found.row, found.cand);
  }

  function sideBySide(cand, old, newLabel, oldLabel) {
    return el('div', {cls: 'hx-side'}, fullFigure(cand.img, newLabel, cand), fullFigure(old.img, oldLabel, old));
  }

  function slider(cand, old, newLabel, oldLabel) {
    if (!srcOf(cand.img) || !srcOf(old.img)) return sideBySide(cand, old, newLabel, oldLabel);
    var under = el('img', {cls: 'hx-slider-under', src: srcOf(old.img), alt: oldLabel, draggable: 'false'});
    var over = el('img', {cls: 'hx-slider-over', src: srcOf(cand.img), alt: newLabel, draggable: 'false'});
    var handle = el('span', {cls: 'hx-slider-handle'});
    var stage = el('div', {cls: 'hx-slider'}, under, over, handle);
    var range = el('input', {type: 'range', min: '0', max: '100', value: '50', cls: 'hx-slider-range',
                             'aria-label': 'Slider: left of it this run, right of it the baseline'});
    function place(at) {
      over.style.clipPath = 'inset(0 ' + (100 - at) + '% 0 0)';
      handle.style.left = at + '%';
      range.value = String(at);
    }
    function drag(event) {
      var box = stage.getBoundingClientRect();
      if (box.width) place(Math.max(0, Math.min(100, Math.round(100 * (event.clientX - box.left) / box.width))));
    }
    stage.addEventListener('pointerdown', function (event) {  // no image drag-and-drop: the slider follows the pointer
      event.preventDefault();
      stage.setPointerCapture(event.pointerId);
      drag(event);
    });
    stage.addEventListener('pointermove', function (event) { if (stage.hasPointerCapture(event.pointerId)) drag(event); });
    range.addEventListener('input', function () { place(Number(range.value)); });
    place(50);
    return el('figure', {cls: 'hx-full hx-full-cand'}, stage, range,
              el('figcaption', {text: 'Drag: left, ' + newLabel + '; right, ' + oldLabel}));
  }

  function flip(cand, old, newLabel, oldLabel) {
    var image = el('img', {cls: 'hx-flip-image'});
    var caption = el('figcaption');
    var button = el('button', {type: 'button', cls: 'hx-flip'});
    function show() {
      var which = compare.flipped ? old : cand;
      image.setAttribute('src', srcOf(which.img) || '');
      image.setAttribute('alt', compare.flipped ? oldLabel : newLabel);
      image.setAttribute('data-showing', compare.flipped ? 'baseline' : 'current');
      caption.textContent = 'Showing ' + (compare.flipped ? oldLabel : newLabel);
      button.textContent = compare.flipped ? 'Show this run (f)' : 'Show the baseline (f)';
    }
    button.addEventListener('click', function () { compare.flipped = !compare.flipped; show(); });
    show();
    return el('figure', {cls: 'hx-full hx-full-cand hx-flipper'}, button, image, caption);
  }

  function difference(cand, old, newLabel, oldLabel) {
    if (!cand.diff) {
      return el('div', {cls: 'hx-noimage hx-full-empty', text: 'No difference image: it is made where both candidates ' +
        'have a full-size view (failures, and every candidate of a task that got worse).'});
    }
    return el('figure', {cls: 'hx-full hx-full-cand'}, el('img', {cls: 'hx-diff', src: cand.diff, alt: 'difference'}),
      el('figcaption', {text: 'Pixel difference of ' + newLabel + ' and ' + oldLabel +
        ', brightened 3 times: black where they agree'}));
  }

  function fullFigure(image, caption, cand) {
    var figure = el('figure', {cls: 'hx-full' + (cand ? ' hx-full-cand' : '')});
    if (image && (image.view || image.src)) {
      var src = image.view || image.src;
      var img = el('img', {src: src, alt: caption, width: image.view ? image.vw : image.w, height: image.view ? image.vh : image.h});
      figure.appendChild(image.view ? el('a', {href: image.view, target: '_blank', title: 'open the view alone'}, img) : img);
      var size = image.view ? image.vw + '\u00d7' + image.vh + ' px' : 'thumbnail only: ' +
        (DATA.selfContained ? 'a self-contained report holds no full-size views' : 'full-size views are kept for failures');
      figure.appendChild(el('figcaption', {text: caption + ' (' + size + ')'}));
    } else {
      figure.appendChild(el('div', {cls: 'hx-noimage hx-full-empty', text: image && image.error ? image.error : 'no image'}));
      figure.appendChild(el('figcaption', {text: caption}));
    }
    return figure;
  }

  function verdictBlock(cand) {
    var box = el('section', {cls: 'hx-verdict'}, el('h4', {text: 'Judge'}));
    if (cand.refusal) box.appendChild(el('p', {}, el('b', {text: 'Refusal: '}), el('span', {cls: 'hx-pre', text: cand.refusal})));
    if (cand.error) box.appendChild(el('p', {}, el('b', {text: 'Error: '}), el('span', {cls: 'hx-pre', text: cand.error})));
    if (cand.verdict || cand.judge) {
      box.appendChild(el('p', {}, el('b', {text: 'Verdict: '}), (cand.verdict || 'none') + (cand.judge ? ' by ' + cand.judge : '')));
    }
    if (cand.reasoning) box.appendChild(el('div', {cls: 'hx-reasoning hx-pre', text: cand.reasoning}));
    if (cand.votes && cand.votes.length) box.appendChild(votesList(cand.votes, 'hx-votes'));
    if (box.childNodes.length === 1) box.appendChild(el('p', {text: 'Not judged.'}));
    return box;
  }

  function humanBlock(cand) {
    if (!cand.human) return null;
    var verdict = cand.human.verdict || 'a tie';
    var box = el('section', {cls: 'hx-human'}, el('h4', {text: 'Human panel'}),
      el('p', {}, el('b', {text: 'Panel: '}), verdict + ((cand.flags || []).indexOf('disagree') >= 0 ? ' (the judge said otherwise)' : '')));
    var votes = cand.human.votes || cand.votes || [];  // none of its own: the judge is the panel (labels)
    if (votes.length) box.appendChild(votesList(votes, 'hx-human-votes'));
    return box;
  }

  function votesList(votes, cls) {
    var ul = el('ul', {cls: cls});
    votes.forEach(function (v) {
      var li = el('li', {}, el('b', {text: (v.who || 'vote') + ': '}), v.verdict || '?');
      if (v.note) li.appendChild(el('div', {cls: 'hx-note-text hx-pre'}, el('i', {text: 'note: '}), v.note));
      if (v.reasoning) li.appendChild(el('div', {cls: 'hx-pre', text: v.reasoning}));
      (v.other || []).forEach(function (kv) { li.appendChild(el('div', {cls: 'hx-pre', text: kv[0] + ': ' + kv[1]})); });
      ul.appendChild(li);
    });
    return ul;
  }

  function factsBlock(cand) {
    var dl = el('dl', {cls: 'hx-facts'});
    (cand.facts || []).forEach(function (f) { dl.appendChild(el('dt', {text: f[0]})); dl.appendChild(el('dd', {text: f[1]})); });
    signalFacts(cand.signals).forEach(function (f) { dl.appendChild(el('dt', {text: f[0]})); dl.appendChild(el('dd', {text: f[1]})); });
    (cand.flags || []).forEach(function (f) {
      dl.appendChild(el('dt', {text: 'diagnostic'})); dl.appendChild(el('dd', {cls: 'hx-flag-text', text: flagLabel(f)}));
    });
    return el('section', {cls: 'hx-facts-box'}, el('h4', {text: 'Facts'}), dl);
  }

  function signalFacts(s) {
    if (!s) return [];
    var facts = [];
    var yes = function (v) { return v ? 'yes' : 'no'; };
    if (s.width && s.height) facts.push(['pixels', s.width + '\u00d7' + s.height]);
    if (typeof s.size_match === 'boolean') facts.push(['same size as the reference', yes(s.size_match)]);
    if (typeof s.aspect_match === 'boolean') facts.push(['same aspect ratio', yes(s.aspect_match)]);
    if (typeof s.unchanged === 'boolean') facts.push(['unchanged', yes(s.unchanged)]);
    if (typeof s.ssim === 'number') facts.push(['SSIM', s.ssim.toFixed(3)]);
    if (typeof s.delta_e === 'number') facts.push(['\u0394E', s.delta_e.toFixed(2)]);
    return facts;
  }

  // ------------------------------------------------------------------ keys, scrolling, start

  document.addEventListener('keydown', function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (target && /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName)) return;
    var key = event.key;
    if (key === 'j' || key === 'k') { moveTask(key === 'j' ? 1 : -1); event.preventDefault(); return; }
    if (viewer.open) {
      if (key === 'ArrowRight' || key === 'ArrowLeft') { step(key === 'ArrowRight' ? 1 : -1); event.preventDefault(); }
      var flipper = viewer.querySelector('.hx-flip');
      if (key === 'f' && viewer.querySelector('.hx-compare')) {
        if (flipper) flipper.click(); else setMode('flip');
        event.preventDefault();
      }
      return;  // Escape: the dialog closes itself
    }
    var onButton = target && target.tagName === 'BUTTON';
    if ((key === 'Enter' || key === 'o') && !onButton && state.task) { openFirstOfTask(); event.preventDefault(); }
  });

  if ('IntersectionObserver' in window) {
    new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; }) && drawn < shown.length) drawUntil(drawn);
    }, {rootMargin: '800px 0px'}).observe(more);
  }

  function applyHash() {
    var next = readHash();
    var openKey = next.open;
    next.open = null;
    state = next;
    refresh();
    if (state.task && indexOfTask(state.task) >= 0) goTask(indexOfTask(state.task));
    if (openKey) open(openKey); else close();
  }

  window.addEventListener('hashchange', applyHash);
  applyHash();
  document.getElementById('hx-browser').setAttribute('data-ready', 'true');
})();
