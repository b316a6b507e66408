// Job page: CPU, memory (against its limit), I/O and GPU plots from usage.json, live while the job runs.
"use strict";
(function () {
  const section = document.getElementById("usage");
  if (!section || !window.uPlot) return;
  const POLL_MS = 5000;
  const MAX_TASK_LINES = 8; // more tasks: the summed line only
  const WORDS = window.PortalCharts.words(section);

  // One time axis for the chart: every task's sample times, each task's values placed on it.
  function align(tasks, field) {
    const times = Array.from(new Set(tasks.flatMap((task) => task.t))).sort((a, b) => a - b);
    const lines = tasks.map((task) => {
      const at = new Map(task.t.map((t, i) => [t, task[field][i]]));
      return { label: task.name, values: times.map((t) => (at.has(t) ? at.get(t) : null)) };
    });
    return { x: times, lines: lines };
  }

  function chart(name, title, unit, tasks, total, field, extra) {
    const holder = section.querySelector(`[data-chart="${name}"]`);
    const shown = tasks.length > 1 && tasks.length <= MAX_TASK_LINES ? tasks : [];
    const aligned = align(shown.length ? shown : [{ name: WORDS.total || "total", t: total.t, [field]: total[field] }], field);
    if (shown.length) {
      const sum = new Map(total.t.map((t, i) => [t, total[field][i]]));
      aligned.lines.push({ label: WORDS.total || "total", values: aligned.x.map((t) => (sum.has(t) ? sum.get(t) : null)), dash: [6, 4] });
    }
    (extra || []).forEach((line) => aligned.lines.push({ label: line.label, values: aligned.x.map(() => line.value), dash: [2, 4], color: "#c0392b" }));
    window.PortalCharts.draw(holder, title, unit, aligned.x, aligned.lines);
  }

  function render(usage) {
    const tasks = usage.tasks.filter((task) => task.t && task.t.length);
    section.querySelector("[data-usage-empty]").hidden = tasks.length > 0;
    section.querySelector("[data-usage-charts]").hidden = tasks.length === 0;
    if (!tasks.length) return;
    const limits = Array.from(new Set(usage.tasks.map((task) => task.limit_mb)));
    const limitLines = limits.map((mb) => ({ label: (WORDS.limit || "limit {mb} MB").replace("{mb}", mb), value: tasks.length > 1 && tasks.length <= MAX_TASK_LINES ? mb : mb * usage.tasks.length }));
    chart("cpu", section.dataset.cpuTitle, WORDS.cores || "cores", tasks, usage.total, "cpu");
    chart("memory", section.dataset.memoryTitle, "MB", tasks, usage.total, "memory_mb", limitLines);
    chart("io", section.dataset.ioTitle, "KB/s", tasks, usage.total, "net_rx_kbps");
    const gpu = tasks.some((task) => task.gpu_util.some((v) => v !== null));
    section.querySelector('[data-chart="gpu"]').hidden = !gpu;
    if (gpu) chart("gpu", section.dataset.gpuTitle, "%", tasks, usage.total, "gpu_util");
    section.dataset.rendered = "true";
  }

  window.PortalCharts.poll(section, section.dataset.usageUrl, render, POLL_MS, () => {
    section.querySelector("[data-usage-empty-live]").hidden = true;
    section.querySelector("[data-usage-empty-ended]").hidden = false;
  });
})();
