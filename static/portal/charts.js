// Time-series charts on uPlot (static/vendor/uplot), shared by the job page and the dashboard.
"use strict";
window.PortalCharts = (function () {
  const STEP_INCREMENTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8]; // whole steps
  const COLORS = ["#2457c5", "#e67e22", "#27ae60", "#8e44ad", "#c0392b", "#16a085", "#d35400", "#2c3e50"];

  // The page's words for the charts (its language): data-chart-labels on <body> or a section,
  // a JSON object the template translates; English when absent.
  function words(element) {
    const holder = element && element.closest("[data-chart-labels]");
    try {
      return holder ? JSON.parse(holder.dataset.chartLabels) : {};
    } catch (error) {
      return {};
    }
  }

  // Draws (or redraws) a chart in `holder`: x = epoch seconds, lines = [{label, values, dash, color}].
  // `xLabel`: x is a plain number (a training step) so named, and y spans the values (not from 0).
  // `xRange`: [min, max] of the x axis (else the data's: uPlot pads a single point by years).
  function draw(holder, title, unit, x, lines, xLabel, xRange) {
    const width = Math.max(280, holder.clientWidth || 600);
    const yRange = xLabel ? (u, min, max) => (min === max ? [min - 1, max + 1] : [min, max]) : (u, min, max) => [0, Math.max(max * 1.1, 1)];
    const options = {
      title: title,
      width: width,
      height: 220,
      scales: { x: xRange ? { time: !xLabel, range: () => xRange } : { time: !xLabel }, y: { range: yRange } },
      axes: [xLabel ? { label: xLabel, incrs: STEP_INCREMENTS } : {}, { label: unit, size: 60 }],
      series: [{ label: xLabel || words(holder).time || "Time" }].concat(lines.map((line, i) => ({
        label: line.label,
        stroke: line.color || COLORS[i % COLORS.length],
        dash: line.dash,
        width: line.dash ? 1.5 : 2,
        spanGaps: true,
      }))),
    };
    const data = [x].concat(lines.map((line) => line.values));
    if (holder._plot && holder._plot.series.length === options.series.length) {
      holder._plot.setData(data);
      return holder._plot;
    }
    if (holder._plot) holder._plot.destroy();
    holder.textContent = "";
    holder._plot = new uPlot(options, data, holder);
    return holder._plot;
  }

  // A job page's live charts: `render` given `url`'s JSON now, then every `periodMs` while the job
  // runs and the page is seen, once more when it ends (`job-finished`: `onFinished` first).
  function poll(section, url, render, periodMs, onFinished) {
    let finished = section.dataset.finished === "true";
    async function refresh() {
      try {
        const response = await fetch(url, { credentials: "same-origin" });
        if (response.ok) render(await response.json());
      } catch (error) {
        // the next tick tries again
      }
    }
    document.addEventListener("job-finished", () => {
      finished = true;
      if (onFinished) onFinished();
      refresh();
    });
    refresh();
    setInterval(() => { if (!finished && !document.hidden) refresh(); }, periodMs);
  }

  return { draw: draw, words: words, poll: poll, COLORS: COLORS };
})();
