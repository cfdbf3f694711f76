// kh-review console: the operator page's charts, drawn with the vendored uPlot from the
// figures the page's fragment carries as data attributes (#published-chart, #waiting-chart).
// The fragment is replaced at every refresh: the charts are drawn again after each swap, and
// those of the fragment that went are destroyed first (uPlot listens on the window).
(function () {
  "use strict";
  var drawn = [];

  function numbers(el, name) {
    try {
      var v = JSON.parse(el.getAttribute(name) || "[]");
      return Array.isArray(v) ? v.map(Number) : [];
    } catch (e) {
      return [];
    }
  }

  function widthOf(el) {
    return Math.max(200, Math.floor(el.getBoundingClientRect().width || 300));
  }

  function fromZero(u, min, max) {
    return [0, Math.max(1, max)];
  }

  function published(el) {
    var data = [numbers(el, "data-minutes"), numbers(el, "data-published")];
    return new uPlot({
      width: widthOf(el),
      height: 180,
      legend: { show: false },
      scales: { x: { time: true }, y: { range: fromZero } },
      series: [{}, { label: "events", stroke: "#1f6feb", fill: "rgba(31, 111, 235, 0.15)", width: 2 }],
      axes: [{}, { size: 40 }]
    }, data, el);
  }

  function waiting(el) {
    var values = [Number(el.getAttribute("data-undelivered")) || 0, Number(el.getAttribute("data-parked")) || 0];
    var names = ["undelivered", "parked"];
    var bars = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.5, 80] }) : undefined;
    return new uPlot({
      width: widthOf(el),
      height: 140,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false, range: [0.5, 2.5] }, y: { range: fromZero } },
      series: [{}, { label: "rows", stroke: "#9a6700", fill: "rgba(154, 103, 0, 0.4)", paths: bars, points: { show: false } }],
      axes: [
        { splits: function () { return [1, 2]; },
          values: function (u, splits) { return splits.map(function (s) { return names[s - 1] || ""; }); } },
        { size: 40 }
      ]
    }, [[1, 2], values], el);
  }

  function drawAll() {
    drawn.forEach(function (chart) { chart.destroy(); });
    drawn = [];
    if (typeof window.uPlot !== "function") return;
    var p = document.getElementById("published-chart");
    var w = document.getElementById("waiting-chart");
    if (p) drawn.push(published(p));
    if (w) drawn.push(waiting(w));
  }

  document.addEventListener("htmx:afterSettle", drawAll);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
