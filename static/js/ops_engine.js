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
