// Draws every server-built Plotly figure on the page: <div data-figure="ID"> takes its figure
// from <script type="application/json" id="ID">. plotly.js is served from our static files.
document.addEventListener("DOMContentLoaded", () => {
  for (const el of document.querySelectorAll("[data-figure]")) {
    const src = document.getElementById(el.dataset.figure);
    if (!src || !window.Plotly) continue;
    const fig = JSON.parse(src.textContent);
    Plotly.newPlot(el, fig.data, fig.layout, {displaylogo: false, responsive: true});
  }
});
