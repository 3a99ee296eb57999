// The usage page's chart: tokens per agent per day, drawn by the vendored uPlot from the page's JSON data
// (#usage-data).  The table under it has the same numbers; without this script the page is that table.
"use strict";
(() => {
  const data = document.getElementById("usage-data");
  const target = document.getElementById("usage-chart");
  if (!data || !target || typeof uPlot === "undefined") return;
  const usage = JSON.parse(data.textContent);
  const colours = ["#0b5cad", "#a40e26", "#1a7f37", "#8250df", "#bc4c00", "#0a7a8a", "#6e7781", "#d4a72c"];
  const days = usage.days.map((day) => Date.parse(day + "T00:00:00Z") / 1000);
  const series = [{ label: "Day (UTC)", value: (u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)) }];
  usage.series.forEach((one, i) => {
    const colour = colours[i % colours.length];
    series.push({ label: one.agent, stroke: colour, width: 2, points: { show: true, size: 7, fill: colour } });
  });
  const width = () => Math.max(280, target.clientWidth || 600);
  const options = {
    width: width(), height: 300, series: series, padding: [12, 48, 0, 0],
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [{ splits: () => days, values: (u, ticks) => ticks.map((t) => new Date(t * 1000).toISOString().slice(0, 10)) },
           { label: "tokens", size: 70 }],
  };
  const chart = new uPlot(options, [days, ...usage.series.map((one) => one.tokens)], target);
  target.dataset.drawn = "true";
  window.addEventListener("resize", () => chart.setSize({ width: width(), height: 300 }));
})();
