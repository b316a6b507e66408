// Web SSH terminal: xterm.js <-> the portal's websocket (web/consumers.py).
// Keystrokes go as binary frames, resizes as JSON text frames; PTY output comes back as binary.
(function () {
  "use strict";
  const screen = document.getElementById("terminal");
  const statusLine = document.getElementById("terminal-status");
  const reconnect = document.getElementById("terminal-reconnect");
  reconnect.addEventListener("click", function () { location.reload(); });
  // lineHeight 1.2: at lineHeight 1 the DOM renderer's 16 px rows clip the glyphs' descent at a
  // device pixel ratio of 1, and "_" vanished ("my_dataset" read "my dataset"; issue 36).
  const term = new Terminal({
    cursorBlink: true, scrollback: 5000, fontSize: 14, lineHeight: 1.2,
    fontFamily: "'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, monospace",
  });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(screen);
  fit.fit();
  window.paiTerminal = term; // tests and the curious read the buffer from here

  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const query = "?cols=" + term.cols + "&rows=" + term.rows;
  const socket = new WebSocket(scheme + "//" + location.host + screen.dataset.socketPath + query);
  socket.binaryType = "arraybuffer";
  const encoder = new TextEncoder();
  const TASK_GONE = 4410; // web/consumers.py's CLOSE_TASK_GONE
  let opened = false;

  function setStatus(text) { statusLine.textContent = text; }

  socket.onopen = function () {
    opened = true;
    setStatus(screen.dataset.msgConnected);
    term.focus();
  };
  socket.onmessage = function (event) {
    term.write(typeof event.data === "string" ? event.data : new Uint8Array(event.data));
  };
  socket.onclose = function (event) {
    const text = !opened ? screen.dataset.msgRefused
      : event.code === TASK_GONE ? screen.dataset.msgTaskEnded : screen.dataset.msgClosed;
    setStatus(text);
    reconnect.hidden = false;
    if (!opened) term.write("\r\n\x1b[31m[" + text + "]\x1b[0m\r\n");
  };

  function send(data) {
    if (socket.readyState === WebSocket.OPEN) socket.send(data);
  }
  term.onData(function (data) { send(encoder.encode(data)); });
  term.onBinary(function (data) {
    const bytes = new Uint8Array(data.length);
    for (let i = 0; i < data.length; i++) bytes[i] = data.charCodeAt(i) & 0xff;
    send(bytes);
  });
  term.onResize(function (size) {
    send(JSON.stringify({ type: "resize", cols: size.cols, rows: size.rows }));
  });
  window.addEventListener("resize", function () { fit.fit(); });

  // Ctrl+Shift+C copies the selection and Ctrl+Shift+V pastes, as in desktop terminals (Ctrl+C
  // and Ctrl+V belong to the shell). Handled here so the browser's own meaning of the keys
  // (DevTools' element picker for Ctrl+Shift+C) does not win.
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const area = document.createElement("textarea"); // plain http: the older copy command
    area.value = text;
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
    term.focus();
    return Promise.resolve();
  }
  term.attachCustomKeyEventHandler(function (event) {
    if (event.type !== "keydown" || !event.ctrlKey || !event.shiftKey || event.altKey || event.metaKey) return true;
    const key = event.key.toLowerCase();
    if (key === "c") {
      event.preventDefault();
      if (term.hasSelection()) copyText(term.getSelection());
      return false;
    }
    if (key === "v") {
      if (navigator.clipboard && navigator.clipboard.readText && window.isSecureContext) {
        event.preventDefault();
        navigator.clipboard.readText().then(function (text) { term.paste(text); }, function () {});
      } // else the browser's own paste reaches xterm's textarea
      return false;
    }
    return true;
  });
})();
