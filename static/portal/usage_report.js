// The Usage page: GPU-hours held and used per day (where the cluster has GPUs), and CPU-hours,
// from the page's own JSON (report.html), on an axis of the range asked for.
"use strict";
(function () {
  const charts = document.querySelector("[data-usage-charts]");
  const data = document.getElementById("usage-data");
  if (!charts || !data || !window.uPlot) return;
  const usage = JSON.parse(data.textContent);
  const words = charts.dataset;
  const gpu = charts.querySelector("[data-usage-chart]");
  if (gpu) {
    window.PortalCharts.draw(gpu, words.title, "h", usage.t, [
      { label: words.held, values: usage.gpu },
      { label: words.used, values: usage.gpu_used, dash: [6, 4] },
    ], undefined, usage.range);
    gpu.dataset.rendered = "true";
  }
  const cpu = charts.querySelector("[data-usage-cpu-chart]");
  window.PortalCharts.draw(cpu, words.cpuTitle, "h", usage.t, [{ label: words.held, values: usage.cpu }], undefined, usage.range);
  cpu.dataset.rendered = "true";
})();
