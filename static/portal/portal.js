// Every page: selects marked data-autosubmit submit their form when changed.
"use strict";
document.querySelectorAll("select[data-autosubmit]").forEach((select) => {
  select.addEventListener("change", () => select.form.submit());
});
