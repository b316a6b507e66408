// Submit page: switch modes without a reload, add/remove task roles, line numbers beside the
// config text with the lines that have errors marked.
"use strict";
(function () {
  const form = document.getElementById("submit-form");
  if (!form) return;
  const modeInput = form.querySelector("[data-mode-input]");

  function showMode(mode) {
    modeInput.value = mode;
    form.querySelectorAll("[data-mode-panel]").forEach((panel) => {
      panel.hidden = panel.dataset.modePanel !== mode;
    });
    document.querySelectorAll("[data-mode-tab]").forEach((tab) => {
      tab.setAttribute("aria-selected", String(tab.dataset.modeTab === mode));
    });
  }
  document.querySelectorAll("[data-mode-tab]").forEach((tab) => {
    tab.addEventListener("click", (event) => {
      event.preventDefault();
      showMode(tab.dataset.modeTab);
    });
  });
  // The server chose the panel (from ?mode= on a GET, from the button pressed on a POST): the
  // address may still say another ?mode= after a POST, so it is never read here.

  // After a refused submit: bring the first field with an error into view, else the summary.
  const firstInvalid = form.querySelector("[data-mode-panel]:not([hidden]) [aria-invalid=true]");
  const summary = form.querySelector("[data-error-summary]");
  if (firstInvalid) {
    firstInvalid.scrollIntoView({ block: "center" });
    firstInvalid.focus({ preventScroll: true });
  } else if (summary) {
    summary.focus();
  }
  form.querySelectorAll("[data-error-link]").forEach((link) => {
    link.addEventListener("click", (event) => {
      const field = document.getElementById(link.getAttribute("href").slice(1));
      if (!field) return;
      event.preventDefault();
      const details = field.closest("details");
      if (details) details.open = true;
      field.scrollIntoView({ block: "center" });
      field.focus({ preventScroll: true });
    });
  });

  // Task roles: each is a fieldset whose inputs are named roles-<n>-<field>.
  const roles = form.querySelector("[data-roles]");
  const template = document.getElementById("role-template");
  let nextIndex = roles.querySelectorAll("[data-role]").length;
  function updateRemoveButtons() {
    const all = roles.querySelectorAll("[data-role]");
    all.forEach((role) => {
      role.querySelector("[data-remove-role]").hidden = all.length < 2;
    });
  }
  form.querySelector("[data-add-role]").addEventListener("click", () => {
    const html = template.innerHTML.replaceAll("roles-__i__", "roles-" + nextIndex);
    roles.insertAdjacentHTML("beforeend", html);
    const added = roles.lastElementChild;
    added.querySelector("input[name$='-name']").value = "taskrole" + nextIndex;
    nextIndex += 1;
    updateRemoveButtons();
    added.querySelector("input").focus();
  });
  roles.addEventListener("click", (event) => {
    const button = event.target.closest("[data-remove-role]");
    if (button) {
      button.closest("[data-role]").remove();
      updateRemoveButtons();
    }
  });
  updateRemoveButtons();

  // Secrets (and the registry password) are password inputs; Show reveals one while pressed.
  form.addEventListener("click", (event) => {
    const button = event.target.closest("[data-reveal]");
    if (!button) return;
    const input = button.parentElement.querySelector("[data-secret-value]");
    const shown = input.type === "password";
    input.type = shown ? "text" : "password";
    button.setAttribute("aria-pressed", String(shown));
    button.textContent = shown ? button.dataset.hide : button.dataset.show;
  });
  const secretRows = form.querySelector("[data-secret-rows]");
  form.querySelector("[data-add-secret]").addEventListener("click", () => {
    const row = secretRows.querySelector("[data-secret-row]").cloneNode(true);
    row.querySelectorAll("input").forEach((input) => {
      input.value = "";
    });
    const value = row.querySelector("[data-secret-value]");
    value.type = "password";
    const reveal = row.querySelector("[data-reveal]");
    reveal.setAttribute("aria-pressed", "false");
    reveal.textContent = reveal.dataset.show;
    secretRows.appendChild(row);
    row.querySelector("input").focus();
  });

  // Tools: an ed25519 key pair made in the browser (WebCrypto); its public half goes into the
  // job's keys, its private half (OpenSSH format) is offered as a download and never sent.
  const keygen = form.querySelector("[data-keygen]");
  if (keygen && window.crypto && crypto.subtle) {
    keygen.hidden = false;
    keygen.querySelector("[data-generate-key]").addEventListener("click", async () => {
      try {
        const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
        const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
        const comment = "pai-job-key";
        const { publicLine, privatePem } = openSshKeys(fromBase64Url(jwk.x), fromBase64Url(jwk.d), comment);
        const keys = form.querySelector("#id_ssh_keys");
        keys.value = (keys.value.trim() ? keys.value.trim() + "\n" : "") + publicLine;
        const link = keygen.querySelector("[data-private-key-link]");
        if (link.href) URL.revokeObjectURL(link.href);
        link.href = URL.createObjectURL(new Blob([privatePem], { type: "application/octet-stream" }));
        link.hidden = false;
        keygen.querySelector("[data-keygen-note]").hidden = false;
      } catch (error) {
        keygen.hidden = true; // a browser without Ed25519 in WebCrypto: paste a key instead
      }
    });
  }
  function fromBase64Url(text) {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  }
  function sshString(bytes) {
    const out = new Uint8Array(4 + bytes.length);
    new DataView(out.buffer).setUint32(0, bytes.length);
    out.set(bytes, 4);
    return out;
  }
  function joined(parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    parts.forEach((p) => { out.set(p, at); at += p.length; });
    return out;
  }
  function base64(bytes) {
    let binary = "";
    bytes.forEach((b) => { binary += String.fromCharCode(b); });
    return btoa(binary);
  }
  function openSshKeys(publicKey, seed, comment) {
    const text = new TextEncoder();
    const type = sshString(text.encode("ssh-ed25519"));
    const publicBlob = joined([type, sshString(publicKey)]);
    const check = crypto.getRandomValues(new Uint8Array(4));
    let secret = joined([check, check, type, sshString(publicKey), sshString(joined([seed, publicKey])), sshString(text.encode(comment))]);
    const padding = [];
    for (let i = 1; (secret.length + padding.length) % 8 !== 0; i += 1) padding.push(i);
    secret = joined([secret, Uint8Array.from(padding)]);
    const none = sshString(text.encode("none"));
    const one = new Uint8Array(4);
    new DataView(one.buffer).setUint32(0, 1);
    const body = joined([text.encode("openssh-key-v1\0"), none, none, sshString(new Uint8Array(0)), one, sshString(publicBlob), sshString(secret)]);
    const lines = base64(body).match(/.{1,70}/g).join("\n");
    return {
      publicLine: `ssh-ed25519 ${base64(publicBlob)} ${comment}`,
      privatePem: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines}\n-----END OPENSSH PRIVATE KEY-----\n`,
    };
  }

  // Line numbers beside the config text; lines with errors are marked.
  const text = form.querySelector("#id_config_text");
  const gutter = form.querySelector("[data-gutter]");
  const errorLines = new Set((gutter.dataset.errorLines || "").split(/\s+/).filter(Boolean).map(Number));
  function renderGutter() {
    const count = Math.max(text.value.split("\n").length, Number(text.rows));
    const lines = [];
    for (let line = 1; line <= count; line += 1) {
      lines.push(errorLines.has(line) ? '<span class="has-error">' + line + "</span>" : "<span>" + line + "</span>");
    }
    gutter.innerHTML = lines.join("");
    gutter.scrollTop = text.scrollTop;
  }
  text.addEventListener("input", renderGutter);
  text.addEventListener("scroll", () => { gutter.scrollTop = text.scrollTop; });
  renderGutter();

  function gotoLine(line) {
    const lines = text.value.split("\n");
    const start = lines.slice(0, line - 1).reduce((sum, current) => sum + current.length + 1, 0);
    text.focus();
    text.setSelectionRange(start, start + (lines[line - 1] || "").length);
    const lineHeight = parseFloat(getComputedStyle(text).lineHeight) || 20;
    text.scrollTop = Math.max(0, (line - 3) * lineHeight);
  }
  form.querySelectorAll("[data-goto-line]").forEach((button) => {
    const line = Number(button.dataset.gotoLine);
    if (line) button.addEventListener("click", () => gotoLine(line));
  });

  // Jupyter on the default image fails at start (it has none): switch to the notebook image, and
  // back if Jupyter is unticked before the image was changed by hand.
  const jupyter = form.querySelector("#id_jupyter");
  const image = form.querySelector("#id_image");
  const switched = form.querySelector("[data-jupyter-image]");
  function matchImageToJupyter() {
    const { defaultImage, notebookImage } = jupyter.dataset;
    if (jupyter.checked && [defaultImage, ""].includes(image.value.trim())) {
      image.value = notebookImage;
      switched.hidden = false;
    } else if (!jupyter.checked && !switched.hidden && image.value === notebookImage) {
      image.value = defaultImage;
      switched.hidden = true;
    }
  }
  if (jupyter && image && switched) {
    jupyter.addEventListener("change", matchImageToJupyter);
    matchImageToJupyter();
  }
})();
