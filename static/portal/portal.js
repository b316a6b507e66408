// Every page: selects marked data-autosubmit submit their form when changed; durations of running
// jobs (data-tick-from: epoch seconds) tick; [data-copy] buttons copy their target's text.
"use strict";
document.querySelectorAll("select[data-autosubmit]").forEach((select) => {
  select.addEventListener("change", () => select.form.submit());
});

(function () {
  // The same spelling as the server's (web.templatetags.portal.format_span).
  function span(seconds) {
    const hours = Math.floor(seconds / 3600);
    const minutes = Math.floor((seconds % 3600) / 60);
    const rest = seconds % 60;
    const two = (value) => String(value).padStart(2, "0");
    if (hours) return hours + "h " + two(minutes) + "m";
    if (minutes) return minutes + "m " + two(rest) + "s";
    return rest + "s";
  }
  setInterval(() => {
    const now = Date.now() / 1000;
    document.querySelectorAll("[data-tick-from]").forEach((element) => {
      element.textContent = span(Math.max(0, Math.floor(now - Number(element.dataset.tickFrom))));
    });
  }, 1000);
})();

document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const target = document.getElementById(button.dataset.copy);
  try {
    await navigator.clipboard.writeText(target.textContent.trim());
    button.textContent = button.dataset.copied || button.textContent;
  } catch (error) {
    // No clipboard (plain http on another host): select the text for a manual copy instead.
    window.getSelection().selectAllChildren(target);
  }
});
