"""Static parts of the dashboard page: template, style sheet and scripts.

The template's ``@@NAME@@`` slots are filled in one pass (``fill``), so inserted text is never
scanned for slots again.
"""

from __future__ import annotations

import re

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@@TITLE@@</title>
<style>@@STYLE@@</style>
<script>@@ERRORS@@</script>
</head>
<body data-plots-done="pending">
<pre id="js-errors"></pre>
<header>@@HEADER@@<nav>@@NAV@@</nav></header>
<main>
@@BODY@@
</main>
<footer>drivesim dashboard · plotly.js embedded, works offline</footer>
<script>@@PLOTLY@@</script>
<script>@@RENDER@@</script>
@@LIVE@@
</body>
</html>
"""

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 1.5em 2em; color: #1d2330; background: #fff; }
h1 { font-size: 1.6em; margin: 0.8em 0 0.2em; }
h2 { font-size: 1.25em; border-bottom: 2px solid #e3e7ee; padding-bottom: 0.2em; margin-top: 1.6em; }
nav { margin: 0.6em 0; font-size: 0.95em; } nav a { color: #2456a6; text-decoration: none; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
table.header th { text-align: left; padding: 0.1em 1.2em 0.1em 0; color: #59627a; font-weight: 600; }
table.data th, table.data td { border: 1px solid #dde2ea; padding: 0.25em 0.6em; text-align: left;
       vertical-align: top; max-width: 40em; overflow-wrap: break-word; hyphens: none; }
table.data td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.data thead th { background: #f3f5f9; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
.plot { width: 100%; min-height: 320px; }
.summary { font-size: 1.1em; font-weight: 600; color: #2456a6; }
.note { color: #3b4357; } .empty { color: #8a93a6; font-style: italic; }
.verdict { background: #fff6e0; border-left: 4px solid #e0a100; padding: 0.6em 0.9em; }
.warnings { color: #a33; }
#js-errors { color: #b00; white-space: pre-wrap; } #js-errors:empty { display: none; }
footer { margin-top: 3em; color: #8a93a6; font-size: 0.85em; }
"""

ERRORS_JS = """
(function () {
  function record(text) {
    var el = document.getElementById('js-errors');
    if (el) { el.textContent += text + '\\n'; return; }
    (window.__pendingErrors = window.__pendingErrors || []).push(text);
  }
  window.__recordError = record;
  window.addEventListener('error', function (e) {
    record('error: ' + e.message + ' at ' + (e.filename || '?') + ':' + (e.lineno || 0));
  });
  window.addEventListener('unhandledrejection', function (e) {
    record('unhandled rejection: ' + (e.reason && (e.reason.stack || e.reason.message) || e.reason));
  });
  document.addEventListener('DOMContentLoaded', function () {
    (window.__pendingErrors || []).forEach(record); window.__pendingErrors = [];
  });
})();
"""

RENDER_JS = """
(function () {
  var KEYS = ['x', 'y', 'z', 'q1', 'values'];
  function points(trace) {
    var n = 0;
    KEYS.forEach(function (k) { var v = trace[k]; if (v && v.length > n) { n = v.length; } });
    return n;
  }
  var plots = Array.prototype.slice.call(document.querySelectorAll('div.plot'));
  var done = plots.map(function (div) {
    try {
      var spec = JSON.parse(document.getElementById(div.id + '-spec').textContent);
      var config = {responsive: true, displaylogo: false};
      return Plotly.newPlot(div, spec.data, spec.layout, config).then(function (gd) {
        var total = 0;
        (gd._fullData || gd.data).forEach(function (t) { total += points(t); });
        div.setAttribute('data-traces', String(gd.data.length));
        div.setAttribute('data-points', String(total));
        div.setAttribute('data-rendered', 'ok');
      }).catch(function (e) {
        div.setAttribute('data-rendered', 'error');
        window.__recordError('plot ' + div.id + ': ' + e);
      });
    } catch (e) {
      div.setAttribute('data-rendered', 'error');
      window.__recordError('plot ' + div.id + ': ' + e);
      return Promise.resolve();
    }
  });
  Promise.all(done).then(function () {
    document.body.setAttribute('data-plots-done', String(plots.length));
  });
})();
"""

_SLOT = re.compile(r"@@([A-Z]+)@@")


def fill(template: str, values: dict[str, str]) -> str:
    """Replace every ``@@NAME@@`` slot of ``template`` with ``values[NAME]`` in one pass."""
    return _SLOT.sub(lambda m: values[m.group(1)], template)
