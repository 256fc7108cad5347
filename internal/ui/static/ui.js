// Station dashboard: the live parts. Every page works without this file;
// it adds the audit log's live tail (server-sent events), restarted when
// htmx swaps in the results of other filters. No inline script runs
// anywhere (the pages' Content-Security-Policy forbids it).
"use strict";
(function () {
  var es = null, shown = null;
  function liveTail() {
    // Once per live element: htmx replaces it with the results of other
    // filters, and the tail then follows those.
    var live = document.getElementById("live");
    if (live === shown) return;
    if (es) { es.close(); es = null; }
    shown = live;
    var rows = document.getElementById("audit-rows");
    if (!live || !rows || !window.EventSource) return;
    var state = document.getElementById("live-state");
    es = new EventSource(live.getAttribute("data-stream"));
    es.addEventListener("open", function () {
      live.classList.add("on");
      state.textContent = "Live: new decisions appear at the top.";
    });
    es.addEventListener("error", function () {
      live.classList.remove("on");
      state.textContent = "Live tail interrupted; reconnecting…";
    });
    es.addEventListener("decision", function (ev) {
      // The row's HTML was rendered, and escaped, by the daemon's
      // row template; it arrives on the page's own origin only.
      var t = document.createElement("template");
      t.innerHTML = ev.data;
      var tr = t.content.firstElementChild;
      if (!tr || tr.tagName !== "TR") return;
      var empty = rows.querySelector("tr.empty");
      if (empty) empty.remove();
      tr.classList.add("fresh");
      rows.insertBefore(tr, rows.firstChild);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", liveTail);
  else liveTail();
  document.addEventListener("htmx:afterSettle", liveTail);
  window.addEventListener("pagehide", function () { if (es) es.close(); });
})();
