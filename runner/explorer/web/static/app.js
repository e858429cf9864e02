// The explorer's only script: live updates of a running run's page over
// server-sent events. Every page works without it.
"use strict";
(function () {
  const run = document.getElementById("run");
  if (!run || !run.dataset.live || !window.EventSource) return;
  const id = run.dataset.id;
  const refresh = async function () {
    for (const panel of run.querySelectorAll("[data-panel]")) {
      const u = "/run/panel?name=" + encodeURIComponent(panel.dataset.panel) + "&id=" + encodeURIComponent(id);
      try {
        const res = await fetch(u, { credentials: "same-origin" });
        if (res.ok) panel.innerHTML = await res.text();
      } catch (e) {
        // A dropped connection: the next event retries.
      }
    }
  };
  const es = new EventSource("/api/v1/run/events?id=" + encodeURIComponent(id));
  es.addEventListener("update", function () {
    refresh();
  });
  es.addEventListener("end", function () {
    es.close();
    delete run.dataset.live;
    refresh().then(function () { run.dataset.ended = "1"; });
  });
  es.addEventListener("error", function () {
    if (es.readyState === EventSource.CLOSED) run.dataset.ended = "1";
  });
})();
