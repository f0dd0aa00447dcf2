// liza serve: the page follows the blackboard (server-sent events), actions are sent
// without leaving the page, times stay relative, keys work as in `liza status --watch`.
// Loaded as a file (the Content-Security-Policy allows no inline script); it inserts
// only what the server rendered (escaped there) and sets text with textContent.
(function () {
  'use strict';

  var busy = false;
  var pending = false;
  var selected = -1;

  function pad(n) { return (n < 10 ? '0' : '') + n; }

  // The server's human_duration: 45s, 3m05s, 2h05m, 3d4h.
  function duration(s) {
    if (s < 60) return s + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm' + pad(s % 60) + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h' + pad(Math.floor((s % 3600) / 60)) + 'm';
    return Math.floor(s / 86400) + 'd' + Math.floor((s % 86400) / 3600) + 'h';
  }

  function tick() {
    var now = Date.now();
    var times = document.querySelectorAll('time[datetime]');
    for (var i = 0; i < times.length; i++) {
      var at = Date.parse(times[i].getAttribute('datetime'));
      if (isNaN(at)) continue;
      var age = Math.round((now - at) / 1000);
      times[i].textContent = age >= 0 ? duration(age) + ' ago' : 'in ' + duration(-age);
    }
  }

  // Someone typing in a form of the page: the page is not replaced under them.
  function editing() {
    var active = document.activeElement;
    if (active && active.closest && active.closest('main') && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) {
      return true;
    }
    var fields = document.querySelectorAll('main input:not([type=hidden]), main textarea');
    for (var i = 0; i < fields.length; i++) {
      var f = fields[i];
      if (f.type === 'checkbox' ? f.checked !== f.defaultChecked : f.value !== f.defaultValue) return true;
    }
    return false;
  }

  function swap(doc, id) {
    var now = document.getElementById(id);
    var next = doc.getElementById(id);
    if (now && next) now.replaceWith(document.adoptNode(next));
  }

  function refresh() {
    if (busy) { pending = true; return; }
    if (editing()) {
      // Swapped once the person leaves the form (focusout, below).
      document.body.classList.add('stale');
      return;
    }
    busy = true;
    fetch(location.href, { credentials: 'same-origin' })
      .then(function (r) {
        if (r.status === 401) throw new Error('signed out');
        return r.text();
      })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, 'text/html');
        swap(doc, 'top');
        swap(doc, 'main');
        if (doc.title) document.title = doc.title;
        if (doc.body) {
          document.body.dataset.revision = doc.body.dataset.revision || '';
          document.body.dataset.seen = doc.body.dataset.seen || '';
        }
        document.body.classList.remove('stale');
        select(selected);
        tick();
      })
      // Not retried: the stream's next event (or its reconnection) refreshes.
      .catch(function (e) {
        if (String(e.message) === 'signed out') {
          flash('signed out: open the address `liza serve` printed (with ?token=…)', false);
        }
      })
      .finally(function () {
        busy = false;
        if (pending) { pending = false; setTimeout(refresh, 200); }
      });
  }

  function flash(text, ok) {
    var box = document.getElementById('flash');
    if (!box) return;
    box.textContent = text;
    box.className = ok ? 'done' : 'refused';
  }

  // The browser reconnects a dropped stream by itself, but not one answered with an
  // error (too many open pages, a restarted server): then it is opened again, later.
  var greeted = false;
  var backoff = 1000;
  function live() {
    if (!window.EventSource) return;
    var source = new EventSource('/events');
    source.addEventListener('hello', function (ev) {
      document.body.classList.add('live');
      // What changed since the page was read: after a reconnection, or between the
      // page's rendering and its stream's opening.
      if (greeted || ev.data !== document.body.dataset.seen) refresh();
      greeted = true;
      backoff = 1000;
    });
    source.addEventListener('changed', refresh);
    source.onerror = function () {
      document.body.classList.remove('live');
      if (source.readyState === EventSource.CLOSED) {
        setTimeout(live, backoff);
        backoff = Math.min(backoff * 2, 30000);
      }
    };
  }

  document.addEventListener('submit', function (ev) {
    var form = ev.target;
    if (!form.matches || !form.matches('form.action')) return;
    ev.preventDefault();
    if (form.dataset.action === 'abort' && !window.confirm('Abort the sprint? Every supervisor stops.')) return;
    var button = form.querySelector('button');
    if (button) {
      if (button.disabled) return;
      button.disabled = true;
    }
    fetch(form.action, {
      method: 'POST',
      credentials: 'same-origin',
      body: new URLSearchParams(new FormData(form))
    })
      .then(function (r) { return r.text().then(function (t) { return [r.status, t]; }); })
      .then(function (answer) {
        var doc = new DOMParser().parseFromString(answer[1], 'text/html');
        var outcome = doc.getElementById('outcome');
        flash(outcome ? outcome.textContent : answer[1], answer[0] < 300);
        if (answer[0] < 300) form.reset();
        refresh();
      })
      .catch(function (e) { flash('the action could not be sent: ' + e, false); })
      .finally(function () { if (button) button.disabled = false; });
  });

  // Rows: j/k select, Enter (or a tap) opens.
  function rows() { return document.querySelectorAll('main tbody tr'); }

  // The selection is a row's place in the page; `scroll` brings it into view (a key
  // press does, a live update does not).
  function select(i, scroll) {
    var all = rows();
    if (!all.length || i < 0) { selected = -1; return; }
    selected = Math.max(0, Math.min(i, all.length - 1));
    for (var n = 0; n < all.length; n++) all[n].classList.toggle('sel', n === selected);
    if (scroll) all[selected].scrollIntoView({ block: 'nearest' });
  }

  function open(row) {
    if (!row) return;
    var link = row.dataset.href || (row.querySelector('a') || {}).href;
    if (link) location.href = link;
  }

  document.addEventListener('click', function (ev) {
    var row = ev.target.closest && ev.target.closest('tr[data-href]');
    if (row && !ev.target.closest('a, button, input, select, textarea')) open(row);
  });

  function press(action) {
    var form = document.querySelector('form[data-action="' + action + '"]');
    if (form) form.requestSubmit();
  }

  document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
    var t = ev.target;
    if (t && /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) {
      if (ev.key === 'Escape') t.blur();
      return;
    }
    // A focused link or button does what it does with Enter and Space.
    if (t && /^(A|BUTTON)$/.test(t.tagName) && (ev.key === 'Enter' || ev.key === ' ')) return;
    switch (ev.key) {
      case 's': location.href = '/'; break;
      case 'i': location.href = '/inbox'; break;
      case 'l': location.href = '/log'; break;
      case 'j': select(Math.max(selected + 1, 0), true); break;
      case 'k': select(Math.max(selected - 1, 0), true); break;
      case 'Enter': if (selected >= 0) open(rows()[selected]); else return; break;
      case 'Escape': if (location.pathname !== '/') location.href = '/'; break;
      case 'p': press('pause'); break;
      case 'r': press('resume'); break;
      case '/': {
        var filter = document.querySelector('form.filter input');
        if (filter) filter.focus(); else location.href = '/log';
        break;
      }
      case '?': document.body.classList.toggle('help'); break;
      default: return;
    }
    ev.preventDefault();
  });

  // A swap held back while the person typed: done once they leave the form.
  document.addEventListener('focusout', function () {
    setTimeout(function () {
      if (document.body.classList.contains('stale') && !editing()) refresh();
    }, 0);
  });

  tick();
  setInterval(tick, 10000);
  live();
})();
