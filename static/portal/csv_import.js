// People → Import: a refused import shows its text again, from this tab's sessionStorage, so the
// server never echoes the file's passwords into the page. Any other answer forgets it.
"use strict";
(function () {
  const KEY = "pai-people-import";
  const form = document.querySelector("[data-import-form]");
  const box = document.getElementById("csv-text");
  if (!form || !box) return;
  const kept = sessionStorage.getItem(KEY);
  sessionStorage.removeItem(KEY);
  if (kept !== null && document.querySelector("[data-import-errors]")) box.value = kept;
  form.addEventListener("submit", () => {
    if (box.value) sessionStorage.setItem(KEY, box.value);
  });
})();
