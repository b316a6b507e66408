// The Usage page: GPU-hours held and used per day, and CPU-hours, from the page's own JSON (report.html).
"use strict";
(function () {
  const holder = document.querySelector("[data-usage-chart]");
  const data = document.getElementById("usage-data");
  if (!holder || !data || !window.uPlot) return;
  const usage = JSON.parse(data.textContent);
  if (!usage.t.length) return;
  const words = holder.dataset;
  window.PortalCharts.draw(holder, words.title, "h", usage.t, [
    { label: words.held, values: usage.gpu },
    { label: words.used, values: usage.gpu_used, dash: [6, 4] },
  ]);
  window.PortalCharts.draw(document.querySelector("[data-usage-cpu-chart]"), words.cpuTitle, "h", usage.t, [
    { label: words.held, values: usage.cpu },
  ]);
  holder.dataset.rendered = "true";
})();
