// Charts for the Contracts page, drawn by uPlot (vendor/uPlot.iife.min.js, pinned in vendor/uplot.json).
// uPlot draws on a canvas and writes its title and legend with textContent, so a label from the server
// is never parsed as HTML; it sets styles through the CSSOM only, which the page's CSP allows. Colours
// come from the page's CSS variables, in Airflow's light or dark theme (read from the UI around the
// iframe, else the browser's preference), and follow a theme switch.
"use strict";
(function () {
  const charts = new Set();

  function airflowDark() {
    try {
      const top = window.top;
      if (top && top !== window && top.location.origin === window.location.origin) {
        const root = top.document.documentElement;
        if (root.classList.contains("dark") || root.dataset.theme === "dark") return true;
        if (root.classList.contains("light") || root.dataset.theme === "light") return false;
        if (root.style.colorScheme) return root.style.colorScheme === "dark";
      }
    } catch (e) { /* another origin: the browser's preference */ }
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }

  function applyTheme() {
    const theme = airflowDark() ? "dark" : "light";
    if (document.documentElement.dataset.theme !== theme) {
      document.documentElement.dataset.theme = theme;
      charts.forEach((c) => c.redraw());
    }
  }

  function colour(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function palette() {
    return {
      text: colour("--chart-text", "#1a202c"),
      grid: colour("--chart-grid", "#e2e8f0"),
      bar: colour("--chart-bar", "#3182ce"),
      line: colour("--chart-line", "#38a169"),
    };
  }

  function width(container) {
    return Math.max(240, Math.min(720, container.clientWidth || 480));
  }

  function axis(p, extra) {
    return Object.assign({ stroke: p.text, grid: { stroke: p.grid, width: 1 }, ticks: { stroke: p.grid } }, extra);
  }

  // One chart in a container: built from a spec, rebuilt on a theme switch or a resize.
  function mount(container, spec) {
    if (!window.uPlot || !container) return null;
    const entry = { plot: null };
    entry.redraw = function () {
      if (entry.plot) entry.plot.destroy();
      const p = palette();
      const built = spec(p);
      entry.plot = new window.uPlot(Object.assign({ width: width(container), height: 220 }, built.opts), built.data, container);
    };
    container.textContent = "";
    container.setAttribute("role", "img");
    entry.redraw();
    charts.add(entry);
    return entry;
  }

  function clear(container) {
    charts.forEach((c) => {
      if (c.plot && container.contains(c.plot.root)) {
        c.plot.destroy();
        charts.delete(c);
      }
    });
    container.textContent = "";
  }

  // A bar chart: labels[i] under bar i, values[i] its height (a count).
  function bars(container, opts) {
    clear(container);
    const labels = (opts.labels || []).map(String);
    const values = (opts.values || []).map((v) => (typeof v === "number" && isFinite(v) ? v : 0));
    container.dataset.chartPoints = String(labels.length);
    container.setAttribute("aria-label", String(opts.title || "chart"));
    if (!labels.length) return null;
    const xs = labels.map((_, i) => i);
    return mount(container, (p) => ({
      data: [xs, values],
      opts: {
        title: String(opts.title || ""),
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false, range: [-0.5, labels.length - 0.5] }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
        axes: [
          axis(p, { splits: () => xs, values: (u, splits) => splits.map((i) => labels[i] || "") }),
          axis(p, { label: String(opts.yLabel || ""), values: (u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : "")) }),
        ],
        series: [{}, { label: String(opts.yLabel || ""), stroke: p.bar, fill: p.bar, paths: window.uPlot.paths.bars({ size: [0.6, 80] }) }],
      },
    }));
  }

  // A line chart of shares (0..1) against xs; a null y is a gap (nothing to show at that point).
  function line(container, opts) {
    clear(container);
    const xs = (opts.xs || []).filter((x) => typeof x === "number" && isFinite(x));
    const ys = (opts.ys || []).slice(0, xs.length).map((y) => (typeof y === "number" && isFinite(y) ? y : null));
    container.dataset.chartPoints = String(xs.length);
    container.setAttribute("aria-label", String(opts.title || "chart"));
    if (!xs.length) return null;
    const yMax = typeof opts.yMax === "number" ? opts.yMax : 1;
    return mount(container, (p) => ({
      data: [xs, ys],
      opts: {
        title: String(opts.title || ""),
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false }, y: { range: [0, yMax] } },
        axes: [
          axis(p, { label: String(opts.xLabel || "") }),
          axis(p, { label: String(opts.yLabel || ""), values: (u, splits) => splits.map((v) => Math.round(v * 100) + "%") }),
        ],
        series: [{}, { label: String(opts.yLabel || ""), stroke: p.line, width: 2, points: { show: true, size: 5 } }],
      },
    }));
  }

  applyTheme();
  try {
    if (window.top && window.top !== window && window.top.location.origin === window.location.origin) {
      new MutationObserver(applyTheme).observe(window.top.document.documentElement, {
        attributes: true,
        attributeFilter: ["class", "style", "data-theme"],
      });
    }
  } catch (e) { /* another origin */ }
  if (window.matchMedia) {
    const query = window.matchMedia("(prefers-color-scheme: dark)");
    if (query.addEventListener) query.addEventListener("change", applyTheme);
  }
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => charts.forEach((c) => c.redraw()), 150);
  });

  window.DocsignCharts = { bars: bars, line: line, theme: () => document.documentElement.dataset.theme };
})();
