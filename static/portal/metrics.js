// Job page: the tasks' training metrics from metrics.json, one chart per metric over the steps
// (each task a line), live while the job runs; what was left out said above them.
"use strict";
(function () {
  const section = document.getElementById("metrics");
  if (!section || !window.uPlot) return;
  const POLL_MS = 10000;
  const MAX_TASK_LINES = 8; // more tasks: the first ones only

  // One step axis for a metric: every task's steps, each task's values placed on it.
  function align(series) {
    const steps = Array.from(new Set(series.flatMap((one) => one.steps))).sort((a, b) => a - b);
    const lines = series.map((one) => {
      const at = new Map(one.steps.map((step, i) => [step, one.values[i]]));
      return { label: one.task, values: steps.map((step) => (at.has(step) ? at.get(step) : null)) };
    });
    return { x: steps, lines: lines };
  }

  function leftOut(metrics) {
    const note = section.querySelector("[data-metrics-left-out]");
    const parts = [];
    if (metrics.badLines) parts.push(note.dataset.badText.replace("{count}", metrics.badLines));
    if (metrics.dropped) parts.push(note.dataset.droppedText.replace("{count}", metrics.dropped).replace("{cap}", metrics.cap));
    note.textContent = parts.join(" ");
    note.hidden = parts.length === 0;
  }

  function render(metrics) {
    const charts = section.querySelector("[data-metrics-charts]");
    const any = metrics.series.length > 0;
    section.querySelector("[data-metrics-empty]").hidden = any;
    section.querySelector("[data-metrics-csv]").hidden = !any;
    charts.hidden = !any;
    leftOut(metrics);
    const names = Array.from(new Set(metrics.series.map((one) => one.name)));
    // Every chart's holder first: the grid's columns (and so each chart's width) are then known.
    const holders = names.map((name) => {
      let holder = Array.from(charts.children).find((chart) => chart.dataset.metric === name);
      if (!holder) {
        holder = document.createElement("div");
        holder.className = "chart";
        holder.dataset.metric = name;
        charts.appendChild(holder);
      }
      return holder;
    });
    names.forEach((name, i) => {
      const aligned = align(metrics.series.filter((one) => one.name === name).slice(0, MAX_TASK_LINES));
      window.PortalCharts.draw(holders[i], name, "", aligned.x, aligned.lines, section.dataset.stepLabel);
    });
    section.dataset.rendered = "true";
  }

  window.PortalCharts.poll(section, section.dataset.metricsUrl, render, POLL_MS);
})();
