// Job page: refresh the summary, tasks and events while the job is live; tail the task's log.
"use strict";
(function () {
  const live = document.getElementById("job-live");
  if (!live) return;
  const POLL_MS = 1500;
  let finished = live.dataset.finished === "true";

  async function refreshStatus() {
    try {
      const response = await fetch(live.dataset.statusUrl, { credentials: "same-origin" });
      if (!response.ok) return;
      const data = await response.json();
      live.innerHTML = data.html;
      if (data.finished && !finished) {
        finished = true;
        document.dispatchEvent(new Event("job-finished"));
      }
    } catch (error) {
      // try again on the next tick
    }
  }
  setInterval(() => { if (!finished && !document.hidden) refreshStatus(); }, POLL_MS);

  const log = document.querySelector("pre[data-log-url]");
  if (!log) return;
  const follow = document.querySelector("[data-log-follow]");
  const select = document.querySelector("[data-log-task]");
  let lastText = null;

  async function refreshLog() {
    const url = new URL(log.dataset.logUrl, location.href);
    url.searchParams.set("task", log.dataset.task);
    url.searchParams.set("tail", "65536");
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok) return;
      const text = await response.text();
      if (text !== lastText) {
        lastText = text;
        log.textContent = text || log.dataset.emptyText || "";
        if (!follow || follow.checked) log.scrollTop = log.scrollHeight;
      }
    } catch (error) {
      // try again on the next tick
    }
  }
  if (select) {
    select.addEventListener("change", () => {
      log.dataset.task = select.value;
      lastText = null;
      refreshLog();
    });
  }
  refreshLog();
  // One last read when the job ends, so the log's final lines show.
  document.addEventListener("job-finished", () => setTimeout(refreshLog, 300));
  setInterval(() => { if (!document.hidden && (!finished || lastText === null)) refreshLog(); }, POLL_MS);
})();
