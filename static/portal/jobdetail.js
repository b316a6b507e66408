// Job page: refresh the summary, tasks, attempts and events while the job is live; tail the log
// chosen (any attempt of any task), say when its beginning is left out, filter it by a search and
// open a search result in its context (the lines around it in the whole log).
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
      document.dispatchEvent(new CustomEvent("job-logs", { detail: data.logs || [] }));
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
  const source = document.querySelector("[data-log-source]");
  const stream = document.querySelector("[data-log-stream]");
  const search = document.querySelector("[data-log-search]");
  const download = document.querySelector("[data-log-download]");
  const truncated = document.querySelector("[data-log-truncated]");
  const matches = document.querySelector("[data-log-matches]");
  const context = document.querySelector("[data-log-context]");
  let lastText = null;
  let cutNote = ""; // what the tail leaves out of the log's beginning; said over the tail only
  let contextLine = null; // the line whose context the log shows, instead of the tail or the results

  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? values[name] : whole));
  }

  function bytes(count) {
    const units = ["B", "KB", "MB", "GB"];
    let value = count;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return (unit ? value.toFixed(value < 10 ? 1 : 0) : value) + " " + units[unit];
  }

  // The log as text, or, while a search is typed, the lines of the whole log (searched on the
  // server: the page holds only the log's end) that hold it, with their line numbers, marked.
  let searchTimer = null;
  let searchRun = 0;

  function marked(line, needle) {
    const parts = [];
    const lower = line.toLowerCase();
    let at = 0;
    for (let hit = lower.indexOf(needle); hit !== -1 && needle; hit = lower.indexOf(needle, at)) {
      parts.push(line.slice(at, hit));
      const mark = document.createElement("mark");
      mark.textContent = line.slice(hit, hit + needle.length);
      parts.push(mark);
      at = hit + needle.length;
    }
    parts.push(line.slice(at));
    return parts;
  }

  function numbered(found, needle) {
    const link = document.createElement("a");
    link.className = "log-line-number";
    link.href = pageAddress({ line: found.line });
    link.dataset.logLine = found.line;
    link.title = log.dataset.contextTitle;
    link.textContent = found.line;
    return [link, ...marked(found.text, needle), "\n"];
  }

  // This page's address with the log's choice (and `extra`) in its query, at the log.
  function pageAddress(extra) {
    const page = new URL(location.href);
    page.searchParams.set("log", log.dataset.logKey);
    page.searchParams.set("stream", log.dataset.logStreamName);
    page.searchParams.delete("task");
    page.searchParams.delete("line");
    for (const [name, value] of Object.entries(extra || {})) page.searchParams.set(name, value);
    return page.pathname + page.search + "#log";
  }

  async function getJson(address, values) {
    const url = new URL(address, location.href);
    url.searchParams.set("log", log.dataset.logKey);
    url.searchParams.set("stream", log.dataset.logStreamName);
    for (const [name, value] of Object.entries(values)) url.searchParams.set(name, value);
    const response = await fetch(url, { credentials: "same-origin" });
    const data = await response.json();
    if (!response.ok) throw new Error(data.message || response.statusText);
    return data;
  }

  function showError(error) {
    matches.textContent = String(error.message || error);
    matches.hidden = false;
  }

  async function searchLog(query) {
    const run = ++searchRun;
    let data;
    try {
      data = await getJson(log.dataset.searchUrl, { q: query });
    } catch (error) {
      if (run === searchRun) showError(error);
      return;
    }
    if (run !== searchRun) return; // a newer search was typed meanwhile
    log.replaceChildren();
    const needle = query.toLowerCase();
    for (const found of data.matches) log.append(...numbered(found, needle));
    const values = { matches: data.matched, lines: data.lines, query: query, shown: data.matches.length };
    matches.textContent = fill(data.capped ? matches.dataset.cappedText : matches.dataset.text, values);
    matches.hidden = false;
  }

  // A search result in its context: the lines around it in the whole log, it marked and in view.
  async function openContext(line) {
    const run = ++searchRun;
    clearTimeout(searchTimer);
    let data;
    try {
      data = await getJson(log.dataset.linesUrl, { around: line });
    } catch (error) {
      if (run === searchRun) showError(error);
      return;
    }
    if (run !== searchRun || !data.lines.length) return;
    contextLine = line;
    truncated.hidden = true;
    matches.hidden = true;
    log.replaceChildren();
    const needle = search ? search.value.trim().toLowerCase() : "";
    let hit = null;
    for (const found of data.lines) {
      const row = document.createElement("span");
      row.className = "log-line";
      row.append(...numbered(found, needle));
      if (found.line === line) {
        row.classList.add("log-line-hit");
        hit = row;
      }
      log.append(row);
    }
    const shown = { first: data.lines[0].line, last: data.lines[data.lines.length - 1].line, line: line };
    context.querySelector("[data-text]").textContent = fill(context.querySelector("[data-text]").dataset.text, shown);
    context.hidden = false;
    history.replaceState(null, "", pageAddress({ line: line }));
    if (hit) log.scrollTop = hit.offsetTop - (log.clientHeight - hit.offsetHeight) / 2;
  }

  function leaveContext() {
    if (contextLine === null) return;
    contextLine = null;
    context.hidden = true;
    history.replaceState(null, "", pageAddress());
  }

  function render() {
    if (contextLine !== null) return; // the context stays as opened; the log read meanwhile shows after Back
    const query = search ? search.value.trim() : "";
    clearTimeout(searchTimer);
    // The note on what the tail leaves out is about the tail: the results are of the whole log.
    truncated.hidden = Boolean(query) || !cutNote;
    if (query) {
      searchTimer = setTimeout(() => searchLog(query), 250);
      return;
    }
    searchRun += 1;
    matches.hidden = true;
    log.replaceChildren();
    log.textContent = lastText || log.dataset.emptyText || "";
    if (!follow || follow.checked) log.scrollTop = log.scrollHeight;
  }

  async function refreshLog() {
    const url = new URL(log.dataset.logUrl, location.href);
    url.searchParams.set("log", log.dataset.logKey);
    url.searchParams.set("stream", log.dataset.logStreamName);
    url.searchParams.set("tail", log.dataset.tail);
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok) return;
      const text = await response.text();
      const start = Number(response.headers.get("X-Log-Start") || 0);
      const size = Number(response.headers.get("X-Log-Size") || 0);
      cutNote = start > 0 ? fill(truncated.dataset.text, { shown: bytes(size - start), size: bytes(size) }) : "";
      truncated.textContent = cutNote;
      if (text !== lastText) {
        lastText = text;
        render();
      } else if (contextLine === null) {
        truncated.hidden = Boolean(search && search.value.trim()) || !cutNote;
      }
    } catch (error) {
      // try again on the next tick
    }
  }

  // Which attempt's log (key) and which of its streams (all, stdout, stderr).
  function choose(key, streamName = log.dataset.logStreamName) {
    log.dataset.logKey = key;
    log.dataset.logStreamName = streamName;
    const address = new URL(download.href, location.href);
    address.searchParams.set("log", key);
    address.searchParams.set("stream", streamName);
    download.href = address.pathname + address.search;
    contextLine = null;
    context.hidden = true;
    history.replaceState(null, "", pageAddress());
    lastText = null;
    log.textContent = "";
    refreshLog();
  }
  source.addEventListener("change", () => choose(source.value));
  stream.addEventListener("change", () => choose(source.value, stream.value));
  // A retry or a new run adds logs to choose from.
  document.addEventListener("job-logs", (event) => {
    const logs = event.detail;
    const known = Array.from(source.options, (option) => option.value).join(" ");
    if (!logs.length || logs.map((item) => item.key).join(" ") === known) return;
    const chosen = source.value;
    source.replaceChildren(...logs.map((item) => new Option(item.label, item.key, false, item.key === chosen)));
    if (source.value !== chosen) choose(source.value);
  });
  if (search) {
    search.addEventListener("input", () => {
      leaveContext();
      render();
    });
  }
  log.addEventListener("click", (event) => {
    const link = event.target.closest("[data-log-line]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    openContext(Number(link.dataset.logLine));
  });
  context.querySelector("[data-log-back]").addEventListener("click", () => {
    leaveContext();
    render();
  });
  // "Show log" in the attempts table: the same choice, without leaving the page.
  live.addEventListener("click", (event) => {
    const link = event.target.closest("[data-log-link]");
    if (!link || !source.querySelector('option[value="' + link.dataset.logLink + '"]')) return;
    event.preventDefault();
    source.value = link.dataset.logLink;
    choose(source.value);
    document.getElementById("log").scrollIntoView({ block: "start" });
  });

  refreshLog();
  const wanted = Number(new URL(location.href).searchParams.get("line"));
  if (wanted > 0) openContext(wanted); // a result's address, opened in a new tab or shared
  // One last read when the job ends, so the log's final lines show.
  document.addEventListener("job-finished", () => setTimeout(refreshLog, 300));
  setInterval(() => { if (!document.hidden && (!finished || lastText === null)) refreshLog(); }, POLL_MS);
})();
