// Sweep page: the compared metric against each parameter (one scatter each) and parallel
// coordinates over the parameters and the metric (an axis each, a line per run coloured by its
// metric), drawn as plain SVG from points.json at the width of the page. Pointing at a mark names
// its run (and marks it in every chart); a click opens the run; on a touch screen the first tap
// names it and a second opens it.
"use strict";
(function () {
  const section = document.getElementById("sweep-compare");
  if (!section || !section.dataset.pointsUrl) return;
  const scatters = section.querySelector("[data-sweep-scatters]");
  const parallel = section.querySelector("[data-sweep-parallel]");
  const caption = section.querySelector("[data-sweep-pick]");
  const SVG = "http://www.w3.org/2000/svg";
  let answer = null;
  let axes = [];
  let shade = [];
  let picked = -1;
  let pointer = "mouse";

  function add(parent, name, attributes, text) {
    const node = document.createElementNS(SVG, name);
    for (const key in attributes) node.setAttribute(key, attributes[key]);
    if (text !== undefined) node.textContent = text;
    parent.appendChild(node);
    return node;
  }

  // `text` cut to about `room` pixels (the whole of it in a tooltip).
  function label(parent, attributes, text, room) {
    const letters = Math.max(3, Math.floor(room / 6.5));
    const node = add(parent, "text", Object.assign({ translate: "no" }, attributes), text.length > letters ? text.slice(0, letters - 1) + "…" : text);
    if (text.length > letters) add(node, "title", {}, text);
    return node;
  }

  function shown(value) {
    if (typeof value !== "number") return String(value);
    return Math.abs(value) >= 1e5 || (value !== 0 && Math.abs(value) < 1e-3) ? value.toExponential(1) : String(Number(value.toPrecision(4)));
  }

  function niceStep(range, count) {
    const rough = range / count;
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    const scaled = rough / power;
    return (scaled < 1.5 ? 1 : scaled < 3 ? 2 : scaled < 7 ? 5 : 10) * power;
  }

  // An axis of numbers (its lowest value at 0.05, its highest at 0.95, off the chart's edges):
  // logarithmic when every value is positive and they span 50 times or more (a learning rate's),
  // else linear, in whole steps when every value is whole.
  function numberAxis(values) {
    const finite = values.filter((value) => typeof value === "number" && isFinite(value));
    const low = Math.min.apply(null, finite);
    const high = Math.max.apply(null, finite);
    const log = low > 0 && high / low >= 50;
    const f = log ? Math.log10 : (value) => value;
    let from = f(low);
    let to = f(high);
    if (from === to) {
      const pad = log ? 0.5 : Math.abs(from) * 0.1 || 1;
      from -= pad;
      to += pad;
    }
    let ticks = [];
    if (log) {
      for (let power = Math.ceil(from); power <= Math.floor(to); power++) ticks.push(Math.pow(10, power));
      if (ticks.length < 2) ticks = [low, high];
    } else {
      const whole = finite.every((value) => Number.isInteger(value));
      const step = whole ? Math.max(1, niceStep(to - from, 4)) : niceStep(to - from, 4);
      for (let tick = Math.ceil(from / step) * step; tick <= to + step * 1e-9; tick += step) ticks.push(Number(tick.toPrecision(12)));
    }
    const at = (value) => (typeof value === "number" && isFinite(value) ? 0.05 + (0.9 * (f(value) - from)) / (to - from) : null);
    return { at: at, ticks: ticks.map((tick) => [at(tick), shown(tick)]) };
  }

  // An axis of categories, evenly spaced in their (sorted) order.
  function categoryAxis(categories) {
    const place = new Map(categories.map((category, i) => [category, (i + 0.5) / categories.length]));
    return { at: (value) => (place.has(value) ? place.get(value) : null), ticks: categories.map((c) => [place.get(c), c]), band: 1 / categories.length };
  }

  // Best blue, through purple, to worst orange (the legend's ramp in portal.css).
  function colour(t) {
    return "hsl(" + Math.round(220 + 165 * t) % 360 + ", 70%, " + Math.round(40 + 12 * t) + "%)";
  }

  function runUrl(i) {
    return answer.runUrl.replace("__job__", encodeURIComponent(answer.runOwner + "~" + answer.runs[i]));
  }

  function name(i) {
    if (i === picked) return;
    section.querySelectorAll(".picked").forEach((mark) => mark.classList.remove("picked"));
    picked = i;
    section.querySelectorAll('[data-i="' + i + '"]').forEach((mark) => {
      mark.classList.add("picked");
      mark.parentNode.appendChild(mark); // (drawn above the others)
    });
    caption.textContent = "";
    const link = document.createElement("a");
    link.href = runUrl(i);
    link.textContent = answer.runs[i];
    link.setAttribute("data-picked-run", answer.runs[i]);
    caption.appendChild(link);
    const values = document.createElement("code");
    values.textContent = answer.parameters.map((p, k) => p.name + "=" + shown(answer.values[k][i])).join(" ") + " " + section.dataset.metricLabel + " " + shown(answer.best[i]);
    caption.append(" ", values);
  }

  function listen(svg) {
    svg.addEventListener("pointerdown", (event) => { pointer = event.pointerType; });
    svg.addEventListener("pointerover", (event) => {
      const mark = event.target.closest("[data-i]");
      if (mark && event.pointerType !== "touch") name(Number(mark.dataset.i));
    });
    svg.addEventListener("click", (event) => {
      const mark = event.target.closest("[data-i]");
      if (!mark) return;
      const i = Number(mark.dataset.i);
      if (pointer === "touch" && picked !== i) name(i);
      else window.location.assign(runUrl(i));
    });
  }

  function chart(holder, height, label) {
    const svg = add(holder, "svg", { class: "sweep-chart", width: holder.clientWidth, height: height, viewBox: "0 0 " + holder.clientWidth + " " + height, role: "img", "aria-label": label });
    listen(svg);
    return svg;
  }

  function scatter(holder, k) {
    const width = holder.clientWidth;
    const height = 220;
    const left = 56, right = 12, top = 24, bottom = 40;
    const svg = chart(holder, height, axes[k].name + " / " + section.dataset.metricLabel);
    svg.setAttribute("data-scatter", axes[k].name);
    const x = (t) => left + t * (width - left - right);
    const y = (t) => top + (1 - t) * (height - top - bottom);
    const metric = axes[axes.length - 1];
    const band = axes[k].axis.band || 0;
    for (const [t, text] of metric.axis.ticks) {
      add(svg, "line", { class: "grid", x1: left, x2: width - right, y1: y(t), y2: y(t) });
      add(svg, "text", { x: left - 4, y: y(t) + 4, "text-anchor": "end" }, text);
    }
    for (const [t, text] of axes[k].axis.ticks) {
      add(svg, "line", { class: "grid", x1: x(t), x2: x(t), y1: top, y2: height - bottom });
      label(svg, { x: x(t), y: height - bottom + 14, "text-anchor": "middle" }, text, band ? band * (width - left - right) : 80);
    }
    add(svg, "text", { class: "axis-name", x: 4, y: 12, translate: "no" }, section.dataset.metricLabel);
    add(svg, "text", { class: "axis-name", x: left + (width - left - right) / 2, y: height - 4, "text-anchor": "middle", translate: "no" }, axes[k].name);
    const marks = add(svg, "g", {});
    const radius = answer.runs.length > 300 ? 3 : 4.5;
    order().forEach((i) => {
      const at = axes[k].axis.at(axes[k].values[i]);
      const up = metric.axis.at(answer.best[i]);
      if (at === null || up === null) return;
      const jitter = band ? (((i * 37) % 11) / 10 - 0.5) * band * 0.5 : 0;
      add(marks, "circle", { class: "mark", cx: x(at + jitter), cy: y(up), r: radius, fill: shade[i], "data-i": i });
    });
  }

  function coordinates(holder) {
    const width = holder.clientWidth;
    const height = 280;
    const side = 44, top = 28, bottom = 12;
    const svg = chart(holder, height, section.dataset.parallelLabel);
    const gap = axes.length > 1 ? (width - 2 * side) / (axes.length - 1) : 0;
    const x = (k) => (axes.length > 1 ? side + k * gap : width / 2);
    const y = (t) => top + (1 - t) * (height - top - bottom);
    const marks = add(svg, "g", {});
    order().forEach((i) => {
      const corners = [];
      axes.forEach((axis, k) => {
        const t = axis.axis.at(axis.values[i]);
        if (t !== null) corners.push(x(k).toFixed(1) + "," + y(t).toFixed(1));
      });
      add(marks, "polyline", { class: "mark", points: corners.join(" "), stroke: shade[i], "data-i": i });
    });
    axes.forEach((axis, k) => {
      add(svg, "line", { class: "axis", x1: x(k), x2: x(k), y1: top, y2: height - bottom });
      for (const [t, text] of axis.axis.ticks) label(svg, { class: "tick", x: x(k) + 3, y: y(t) + 4 }, text, k === axes.length - 1 ? side - 4 : gap - 8);
      const anchor = axes.length > 1 && k === 0 ? "start" : k === axes.length - 1 && axes.length > 1 ? "end" : "middle";
      const room = (axes.length > 1 ? gap - 8 : width) * 0.85; // (bold, wider letters)
      label(svg, { class: "axis-name", x: x(k) + (anchor === "start" ? -side + 4 : anchor === "end" ? side - 4 : 0), y: 14, "text-anchor": anchor }, axis.name, room);
    });
  }

  // Worst first, so the best runs are drawn on top.
  function order() {
    const indices = answer.runs.map((_, i) => i);
    const sign = answer.goal === "max" ? 1 : -1;
    return indices.sort((a, b) => sign * (answer.best[a] - answer.best[b]));
  }

  function draw() {
    scatters.textContent = "";
    parallel.textContent = "";
    answer.parameters.forEach((_, k) => {
      const cell = document.createElement("div");
      cell.className = "sweep-scatter";
      scatters.appendChild(cell);
      scatter(cell, k);
    });
    coordinates(parallel);
    const was = picked;
    picked = -1;
    if (was >= 0) name(was);
    section.dataset.chartsRendered = "true";
  }

  function prepare(data) {
    answer = data;
    axes = data.parameters.map((parameter, k) => ({
      name: parameter.name,
      values: data.values[k],
      axis: parameter.kind === "category" ? categoryAxis(parameter.categories) : numberAxis(data.values[k]),
    }));
    const metric = numberAxis(data.best);
    const label = section.dataset.metricLabel;
    axes.push({ name: label, values: data.best, axis: { at: metric.at, ticks: metric.ticks } });
    // The colour by the metric's place between the worst (1) and the best (0), on its axis.
    const low = Math.min.apply(null, data.best);
    const high = Math.max.apply(null, data.best);
    shade = data.best.map((value) => {
      const t = high === low ? 0 : (value - low) / (high - low);
      return colour(data.goal === "max" ? 1 - t : t);
    });
  }

  let drawnWidth = 0;
  window.addEventListener("resize", () => {
    if (!answer || parallel.clientWidth === drawnWidth) return;
    drawnWidth = parallel.clientWidth;
    draw();
  });

  fetch(section.dataset.pointsUrl, { credentials: "same-origin" })
    .then((response) => (response.ok ? response.json() : null))
    .then((data) => {
      if (!data || !data.runs.length) return;
      section.querySelector("[data-sweep-charts]").hidden = false;
      prepare(data);
      drawnWidth = parallel.clientWidth;
      draw();
    })
    .catch(() => {});
})();
