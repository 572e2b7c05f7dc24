// The engine page's charts: figures are built on the server (int21web/ops/charts.py); each
// chart box names the json_script element holding its figure (data-figure).
(() => {
  if (!window.Plotly) return;
  const draw = (box, id) => {
    const el = document.getElementById(id);
    if (!el || !box) return;
    const fig = JSON.parse(el.textContent);
    Plotly.newPlot(box, fig.data, fig.layout, {displayModeBar: false, responsive: true});
  };
  draw(document.getElementById("speed-chart"), "speed-data");
  for (const box of document.querySelectorAll("[data-figure]")) draw(box, box.dataset.figure);
})();

// The Jobs table follows its unfinished jobs: each row still queued or running is read again
// from the API (GET /api/engine-jobs/<id>) every two seconds and redrawn in place; once one
// has ended, the page is fetched again, so the phases below show what the job changed.
(() => {
  const live = () => Array.from(document.querySelectorAll("tr[data-job]"))
    .filter(tr => tr.dataset.state === "queued" || tr.dataset.state === "running");
  if (!live().length) return;
  const cell = (tr, cls, text, badge) => {
    const td = tr.querySelector(cls);
    if (!td) return;
    td.textContent = "";
    if (badge) {
      const span = document.createElement("span");
      span.className = "badge " + text;
      span.textContent = text;
      td.appendChild(span);
    } else {
      td.textContent = text;
    }
  };
  let ended = false;
  const poll = async () => {
    for (const tr of live()) {
      let job;
      try {
        const resp = await fetch("/api/engine-jobs/" + tr.dataset.job, {headers: {Accept: "application/json"}});
        if (!resp.ok) continue;
        job = await resp.json();
      } catch (err) {
        continue;     // the server restarting: the next round asks again
      }
      const p = job.progress || {};
      tr.dataset.state = job.state;
      cell(tr, ".job-state", job.state, true);
      cell(tr, ".job-progress", job.state === "failed" ? (job.reason || "failed")
        : `${p.step ?? 0}/${p.steps ?? job.steps.length} · ${p.what ?? ""}`);
      if (job.state === "done" || job.state === "failed") ended = true;
    }
    if (ended && !live().length) {
      window.setTimeout(() => window.location.reload(), 1500);
      return;
    }
    if (live().length) window.setTimeout(poll, 2000);
  };
  window.setTimeout(poll, 2000);
})();
