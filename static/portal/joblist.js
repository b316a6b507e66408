// Job list: poll the states of the listed jobs and the per-state counts; update them in place.
"use strict";
(function () {
  const table = document.querySelector("[data-live-states]");
  if (!table) return;
  const POLL_MS = 2000;

  async function refresh() {
    const ids = Array.from(table.querySelectorAll("tr[data-job-id]"), (row) => row.dataset.jobId);
    const url = new URL(table.dataset.liveStates, location.href);
    url.searchParams.set("ids", ids.join(","));
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) return;
      const data = await response.json();
      for (const [id, state] of Object.entries(data.states)) {
        const row = table.querySelector('tr[data-job-id="' + id + '"]');
        const badge = row && row.querySelector("[data-state]");
        if (badge && badge.dataset.value !== state) {
          badge.dataset.value = state;
          badge.className = "state state-" + state.toLowerCase();
          badge.textContent = data.labels[state] || state;
          if (state !== "WAITING") {
            // A job that no longer waits has no expected start and no reason to wait (as the page
            // renders it): the cells it had while waiting would say it still does.
            row.querySelectorAll("td.expected-start, td.why").forEach((cell) => {
              cell.textContent = "";
              cell.removeAttribute("title");
            });
          }
        }
      }
      let total = 0;
      for (const value of Object.values(data.counts)) total += value;
      document.querySelectorAll("[data-count-state]").forEach((chip) => {
        const state = chip.dataset.countState;
        chip.querySelector(".count-value").textContent = state ? data.counts[state] || 0 : total;
      });
    } catch (error) {
      // The server is restarting or the network blinked: try again on the next tick.
    }
  }
  setInterval(() => { if (!document.hidden) refresh(); }, POLL_MS);
})();

// A waiting reason too long for its cell is cut with an ellipsis; its title shows all of it on
// hover, and a tap or Enter opens it in place (touch screens have no hover).
(function () {
  function toggle(cell) {
    if (cell && cell.textContent.trim()) cell.classList.toggle("expanded");
  }
  document.addEventListener("click", (event) => toggle(event.target.closest("td.why")));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target.matches && event.target.matches("td.why")) toggle(event.target);
  });
})();
