// The Referee dashboard's charts (/ui). The page embeds its data as JSON
// (<script type="application/json" id="overview-json">); htmx swaps in a fresh copy every few
// seconds and the charts are updated from it. No inline script: the pages' CSP runs only
// files served by the service.
(function () {
  "use strict";

  const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"];

  function readData(id) {
    const node = document.getElementById(id || "overview-json");
    if (!node) return null;
    try {
      return JSON.parse(node.textContent);
    } catch (err) {
      console.warn("dashboard: unreadable chart data", err);
      return null;
    }
  }

  function minuteLabel(minute) {
    return new Date(minute * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  function percent(values) {
    return values.map((v) => (v === null ? null : 100 * v));
  }

  // Rates and latencies have gaps (steps without verdicts): their points are drawn, so a
  // step between two gaps still shows. Verdict counts are continuous (0 when idle).
  function lineOptions(yTitle, yMax, pointRadius, yType) {
    const y = yType === "logarithmic"
      ? { type: "logarithmic", title: { display: true, text: yTitle } }
      : { beginAtZero: true, max: yMax, title: { display: true, text: yTitle } };
    return {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      spanGaps: false,
      interaction: { mode: "index", intersect: false },
      elements: { point: { radius: pointRadius || 0, hitRadius: 6 }, line: { borderWidth: 2 } },
      scales: {
        x: { ticks: { maxTicksLimit: 8, autoSkip: true, maxRotation: 0 } },
        y: y,
      },
      plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } } },
    };
  }

  function dataset(label, data, index, extra) {
    const color = PALETTE[index % PALETTE.length];
    return Object.assign({ label: label, data: data, borderColor: color, backgroundColor: color }, extra || {});
  }

  // Create the chart on first use, update it in place afterwards (keeps the canvas). A chart
  // whose scale type changes is made anew.
  function upsert(id, type, labels, datasets, options) {
    const canvas = document.getElementById(id);
    if (!canvas || typeof Chart === "undefined") return;
    const chart = Chart.getChart(canvas);
    if (chart) {
      chart.data.labels = labels;
      chart.data.datasets = datasets;
      chart.update("none");
      return;
    }
    new Chart(canvas, { type: type, data: { labels: labels, datasets: datasets }, options: options });
  }

  // A log axis cannot show 0: a latency of 0 ms (rounded) is drawn at the floor instead.
  function positive(values) {
    return values.map((v) => (v === null ? null : Math.max(v, 0.001)));
  }

  function renderOverview(data) {
    const labels = data.minutes.map(minuteLabel);
    const vs = data.verifiers;
    upsert("chart-verdicts", "line", labels,
      vs.map((v, i) => dataset(v.name, v.verdicts, i)), lineOptions("verdicts / step"));
    upsert("chart-errors", "line", labels,
      vs.map((v, i) => dataset(v.name, percent(v.error_share), i)), lineOptions("% errors", 100, 3));
    upsert("chart-pass", "line", labels,
      vs.map((v, i) => dataset(v.name, percent(v.pass_rate), i)), lineOptions("% passed", 100, 3));
    upsert("chart-reward", "line", labels,
      vs.map((v, i) => dataset(v.name, v.mean_score, i)), lineOptions("mean reward", undefined, 3));
    const flat = vs.map((v, i) => dataset(v.name, percent(v.zero_variance_share), i));
    flat.push(dataset("all groups", percent(data.zero_variance_all), vs.length,
      { borderDash: [2, 3], borderColor: "#334155", backgroundColor: "#334155" }));
    upsert("chart-zero-variance", "line", labels, flat, lineOptions("% of groups", 100, 3));
    const latency = [];
    vs.forEach((v, i) => {
      latency.push(dataset(v.name + " p50", positive(v.p50_ms), i));
      latency.push(dataset(v.name + " p99", positive(v.p99_ms), i, { borderDash: [6, 4] }));
    });
    upsert("chart-latency", "line", labels, latency, lineOptions("ms", undefined, 3, "logarithmic"));
    if (data.http) {
      upsert("chart-http", "line", labels, [
        dataset("4xx", data.http.client_errors, 4),
        dataset("5xx", data.http.server_errors, 1),
        dataset("503", data.http.refused, 3, { borderDash: [6, 4] }),
      ], lineOptions("answers / step"));
    }
    const edges = data.histogram.edges;
    const bins = data.histogram.counts.map((_, i) =>
      Math.round(100 * edges[i]) + "–" + Math.round(100 * edges[i + 1]) + "%");
    upsert("chart-difficulty", "bar", bins,
      [dataset("prompts", data.histogram.counts, 0)],
      {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { title: { display: true, text: "pass rate" } },
          y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "prompts" } },
        },
        plugins: { legend: { display: false } },
      });
  }

  function renderPrompt(data) {
    const labels = data.visits.map((v) =>
      new Date(v.time * 1000).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }));
    upsert("chart-prompt", "line", labels,
      [dataset("pass rate", percent(data.visits.map((v) => v.pass_rate)), 0)],
      lineOptions("% passed", 100, 4));
  }

  function render() {
    const overview = readData("overview-json");
    if (overview && overview.enabled) renderOverview(overview);
    const prompt = readData("prompt-json");
    if (prompt && prompt.enabled) renderPrompt(prompt);
  }

  document.addEventListener("DOMContentLoaded", render);
  document.addEventListener("htmx:afterSettle", (event) => {
    if (event.target && event.target.id === "overview-data") render();
  });
  // A fragment refused with 401 (the session ended: idle, too old, logged out): back to the
  // login form.
  document.addEventListener("htmx:responseError", (event) => {
    if (event.detail.xhr && event.detail.xhr.status === 401) {
      const ui = document.body.dataset.ui || "/ui";
      window.location.assign(ui + "/login?next=" + encodeURIComponent(window.location.pathname));
    }
  });
})();
