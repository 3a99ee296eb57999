// The usage page's charts: tokens, cost and model calls per agent per day, drawn by the vendored uPlot from the
// page's JSON data (#usage-data), one chart per .usage-chart element (its data-measure: "tokens", "cost" or
// "calls").  Cost comes as exact decimal text per agent and currency, null where it is unknown (a gap, not 0);
// it becomes a number here only as a point's height.  The table under them has the same numbers; without this
// script the page is that table.
"use strict";
(() => {
  const data = document.getElementById("usage-data");
  if (!data || typeof uPlot === "undefined") return;
  const usage = JSON.parse(data.textContent);
  const colours = ["#0b5cad", "#a40e26", "#1a7f37", "#8250df", "#bc4c00", "#0a7a8a", "#6e7781", "#d4a72c"];
  const days = usage.days.map((day) => Date.parse(day + "T00:00:00Z") / 1000);
  const dayOf = (t) => new Date(t * 1000).toISOString().slice(0, 10);
  // Whole numbers on a counting axis (uPlot would tick 0.2 calls apart on a small range).
  const whole = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8, 1e9];
  const charts = [];
  document.querySelectorAll(".usage-chart").forEach((target) => {
    const measure = target.dataset.measure;
    const money = measure === "cost";
    const lines = money
      ? usage.cost.map((one) => ({ label: one.label, values: one.values.map((v) => (v == null ? null : Number(v))) }))
      : usage.series.map((one) => ({ label: one.agent, values: one[measure] }));
    const series = [{ label: "Day (UTC)", value: (u, v) => (v == null ? "" : dayOf(v)) }];
    lines.forEach((one, i) => {
      const colour = colours[i % colours.length];
      series.push({ label: one.label, stroke: colour, width: 2, spanGaps: false,
                    points: { show: true, size: 7, fill: colour },
                    value: (u, v, s, i) => (v == null ? (money && i != null ? "unknown" : "") : String(v)) });
    });
    const width = () => Math.max(280, target.clientWidth || 600);
    const options = {
      width: width(), height: 260, series: series, padding: [12, 48, 0, 0],
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [{ splits: () => days, values: (u, ticks) => ticks.map(dayOf) },
             money ? { label: "cost", size: 70 } : { label: measure, size: 70, incrs: whole }],
    };
    const chart = new uPlot(options, [days, ...lines.map((one) => one.values)], target);
    target.dataset.drawn = "true";
    charts.push(() => chart.setSize({ width: width(), height: 260 }));
  });
  // Drawing the charts may have made the page scroll (and so narrower): fit them once more, and on resizes.
  const fit = () => charts.forEach((resize) => resize());
  requestAnimationFrame(fit);
  window.addEventListener("resize", fit);
})();
