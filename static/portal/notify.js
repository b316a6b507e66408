// Browser notifications while the portal is open: polls the user's jobs that ended since the last
// poll and shows one notification each (asked for in the profile; the browser must allow it).
(function () {
  "use strict";
  const POLL_MS = 15000;
  const url = document.currentScript && document.currentScript.dataset.endedJobsUrl;
  if (!url || !("Notification" in window)) return;
  // The profile's checkbox: the browser asks the user for permission on this click.
  const settings = document.getElementById("notification-settings");
  if (settings) {
    settings.addEventListener("submit", function () {
      if (settings.elements.browser.checked) Notification.requestPermission();
    });
  }
  let since = Math.floor(Date.now() / 1000);

  async function poll() {
    try {
      const answer = await (await fetch(url + "?since=" + since, { credentials: "same-origin" })).json();
      since = answer.now;
      if (!answer.enabled) return;
      if (Notification.permission === "granted") {
        for (const job of answer.jobs) {
          new Notification("PAI: " + job.name, { body: job.state.toLowerCase(), tag: job.name + job.state });
        }
      }
      setTimeout(poll, POLL_MS);
    } catch (error) {
      setTimeout(poll, POLL_MS * 4);
    }
  }
  setTimeout(poll, POLL_MS);
})();
