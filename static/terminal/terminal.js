// Web SSH terminal: xterm.js <-> the portal's websocket (web/consumers.py).
// Keystrokes go as binary frames, resizes as JSON text frames; PTY output comes back as binary.
(function () {
  "use strict";
  const screen = document.getElementById("terminal");
  const statusLine = document.getElementById("terminal-status");
  const reconnect = document.getElementById("terminal-reconnect");
  reconnect.addEventListener("click", function () { location.reload(); });
  const term = new Terminal({ cursorBlink: true, scrollback: 5000, fontSize: 14, fontFamily: "monospace" });
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
    const text = opened ? screen.dataset.msgClosed : screen.dataset.msgRefused;
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
})();
