// Dashboard: each VC's GPUs and jobs, and GPUs used per type, over the last day, refreshed every minute.
"use strict";
(function () {
  const section = document.getElementById("dashboard-history");
  if (!section || !window.uPlot) return;
  const REFRESH_MS = 60000;
  const COLORS = window.PortalCharts.COLORS;
  const WORDS = window.PortalCharts.words(section);
  // "{name} used" and the like, in the page's language (the template's data-chart-labels).
  const say = (key, english, name) => (WORDS[key] || english).replace("{name}", name);

  // Per VC: a solid line and a dashed one of the same colour.
  function lines(history, solid, dashed) {
    return Object.entries(history.vcs).flatMap(([name, series], i) => [
      { label: say(solid, `{name} ${solid.replace("_", " ")}`, name), values: series[solid], color: COLORS[i % COLORS.length] },
      { label: say(dashed, `{name} ${dashed.replace("_", " ")}`, name), values: series[dashed], color: COLORS[i % COLORS.length], dash: [6, 4] },
    ]);
  }

  async function refresh() {
    try {
      const response = await fetch(section.dataset.historyUrl, { credentials: "same-origin" });
      if (!response.ok) return;
      const history = await response.json();
      section.querySelector("[data-history-empty]").hidden = history.t.length > 0;
      if (!history.t.length) return;
      const chart = (name) => section.querySelector(`[data-chart="${name}"]`);
      window.PortalCharts.draw(chart("gpus"), section.dataset.gpusTitle, WORDS.gpus || "GPUs", history.t, lines(history, "gpus_used", "gpus_free"));
      window.PortalCharts.draw(chart("jobs"), section.dataset.jobsTitle, WORDS.jobs || "jobs", history.t, lines(history, "jobs_running", "jobs_waiting"));
      const types = Object.keys(history.gpu_types);
      chart("types").hidden = types.length === 0;
      if (types.length) {
        window.PortalCharts.draw(chart("types"), section.dataset.typesTitle, WORDS.gpus || "GPUs", history.t, types.flatMap((name, i) => [
          { label: say("type_used", "{name} used", name), values: history.gpu_types[name], color: COLORS[i % COLORS.length] },
          { label: say("type_total", "{name} total", name), values: history.t.map(() => history.gpu_type_totals[name] || 0), color: COLORS[i % COLORS.length], dash: [6, 4] },
        ]));
      }
      section.dataset.rendered = "true";
    } catch (error) {
      // the next refresh tries again
    }
  }
  refresh();
  setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);
})();
