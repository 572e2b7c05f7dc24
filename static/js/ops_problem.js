// The problem page's charts: figures are built on the server (int21web/ops/charts.py).
(() => {
  for (const [data, target] of [["graph-data", "graph-chart"], ["speed-data", "speed-chart"], ["timing-data", "timing-chart"]]) {
    const el = document.getElementById(data), box = document.getElementById(target);
    if (!el || !box || !window.Plotly) continue;
    const fig = JSON.parse(el.textContent);
    Plotly.newPlot(box, fig.data, fig.layout, {displayModeBar: false, responsive: true});
  }
})();
