// Sweep page: the compared metric's curves of the top runs overlaid (curves.json), best first.
"use strict";
(function () {
  const section = document.getElementById("sweep-compare");
  if (!section || !window.uPlot) return;
  const holder = section.querySelector("[data-sweep-curves]");

  function render(answer) {
    const steps = Array.from(new Set(answer.runs.flatMap((run) => run.steps))).sort((a, b) => a - b);
    const lines = answer.runs.map((run) => {
      const at = new Map(run.steps.map((step, i) => [step, run.values[i]]));
      return { label: run.run, values: steps.map((step) => (at.has(step) ? at.get(step) : null)) };
    });
    holder.hidden = lines.length === 0;
    if (lines.length) window.PortalCharts.draw(holder, answer.metric, "", steps, lines, section.dataset.stepLabel);
    section.dataset.rendered = "true";
  }

  fetch(section.dataset.curvesUrl, { credentials: "same-origin" })
    .then((response) => (response.ok ? response.json() : null))
    .then((answer) => { if (answer) render(answer); })
    .catch(() => {});
})();
