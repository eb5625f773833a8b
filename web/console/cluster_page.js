// The live cluster of a data plane (admins): its nodesets, nodes, partitions and queue as its
// agent last reported them, refreshed every 5 s and marked stale when the report is old, and
// the nodesets' busy and idle workers over a range from an hour to 90 days.
import { api, messageOf } from "./api.js";
import { barChart, RANGES } from "./charts.js";
import { el, headerRow, mainArea, showPageError, tableWrap } from "./dom.js";
import { fmtTime } from "./format.js";
import { every } from "./state.js";

const QUEUE_ROWS = 200;  // the queue's first rows shown; the count says how many more there are

/** @param {string[]} columns @param {any[][]} rows @param {string} id @param {string} caption @param {string} empty */
function table(columns, rows, id, caption, empty) {
  const body = rows.length ? rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))
    : [el("tr", {}, el("td", { colspan: columns.length, class: "muted" }, empty))];
  return tableWrap(caption, el("table", { id },
    el("caption", {}, caption), headerRow(columns), el("tbody", {}, body)));
}

/** @param {number} used @param {number} total @param {string} [unit] */
const usage = (used, total, unit = "") => `${used}/${total}${unit}`;

// A node's GPUs as its last health check saw them: "3b:00.0 87% 39.1/79.6 GiB 61 °C" each; a
// value nvidia-smi did not have is "?".
/** @param {any[]} [gpus] */
function gpuSummary(gpus) {
  if (!gpus || !gpus.length) return "—";
  /** @param {number|null} v @param {(x: number) => string} f */
  const known = (v, f) => (v === null || v === undefined ? "?" : f(v));
  const gib = (/** @type {number} */ mib) => (mib / 1024).toFixed(1);
  return gpus.map((g) => [g.busId.replace(/^0+:/, ""), known(g.utilizationPercent, (v) => `${v}%`),
    `${known(g.memoryUsedMiB, gib)}/${known(g.memoryTotalMiB, gib)} GiB`,
    known(g.temperatureCelsius, (v) => `${v} °C`)].join(" ")).join("; ");
}

/** @param {any} n */
function nodeState(n) {
  const flags = (n.flags || []).filter((/** @type {string} */ f) => f !== "DYNAMIC_NORM" && f !== "CLOUD");
  return [n.state, ...flags.map((/** @type {string} */ f) => f.toLowerCase())].join("+");
}

/** @param {any} v */
function viewTables(v) {
  /** @param {any} k */
  const serves = (k) => (k.serving ? "serves" : k.responding ? "stands by" : "—");
  return [
    table(["Controller", "Role", "Answers Slurm's ping", "In control"],
      (v.controllers || []).map((/** @type {any} */ k) => [k.name, k.role, k.responding ? "yes" : "no", serves(k)]),
      "controllers-table", "Controllers (slurmctld)", "No controller answered."),
    table(["Nodeset", "Desired", "Current", "Busy", "Idle", "Draining"],
      v.nodesets.map((/** @type {any} */ s) => [s.name, s.desired, s.current, s.busy, s.idle, s.draining]),
      "nodesets-table", "Nodesets: workers wanted and running", "No nodeset."),
    table(["Node", "Nodeset", "State", "Reason", "CPUs allocated", "Memory allocated", "GPUs (use, memory, temperature)"],
      v.nodes.map((/** @type {any} */ n) => [n.name, n.nodeset || "—", nodeState(n), n.reason || "",
        usage(n.cpusAllocated, n.cpus), usage(n.memoryAllocatedMiB, n.memoryMiB, " MiB"), gpuSummary(n.gpus)]),
      "nodes-table", "Nodes", "No node: every nodeset is at zero workers."),
    table(["Partition", "State", "Nodes", "CPUs"],
      v.partitions.map((/** @type {any} */ p) => [p.name, p.state, p.nodes, p.cpus]),
      "partitions-table", "Partitions", "No partition."),
    table(["Job", "Name", "User", "Account", "Partition", "State", "Reason", "Nodes", "CPUs", "Submitted"],
      v.queue.slice(0, QUEUE_ROWS).map((/** @type {any} */ j) => [j.jobId, j.name, j.user, j.account, j.partition,
        j.state, j.state === "PENDING" ? j.reason : "", j.nodes, j.cpus, fmtTime(j.submitTime)]),
      "queue-table", `Queue: ${v.queueTotal} job${v.queueTotal === 1 ? "" : "s"}` +
        (v.queueTotal > QUEUE_ROWS ? `, the first ${QUEUE_ROWS} shown (running, then by priority)` : ""),
      "No job queued or running."),
  ];
}

// One chart per nodeset: its busy and idle workers in each step of the range.
/** @param {any} h @param {string} label */
function historyCharts(h, label) {
  const names = Object.keys(h.nodesets).sort();
  if (!names.length) return [el("p", { class: "muted" }, `No nodeset sample in the last ${label}.`)];
  const colors = /** @type {Record<string, string>} */ ({ busy: "#0a58ca", idle: "#8fb8f5" });
  return names.map((name) => {
    // Steps without a sample (no report) are gaps at zero, so a chart's bars keep their time.
    const byTime = new Map(h.nodesets[name].map((/** @type {any} */ p) => [p.at, p]));
    const bars = [];
    for (let t = Math.floor(h.from / h.step) * h.step; t < h.to; t += h.step) {
      const p = byTime.get(t);
      bars.push({ label: fmtTime(t).slice(5, 16),
        parts: [{ key: "busy", value: p ? p.busy : 0 }, { key: "idle", value: p ? p.idle : 0 }] });
    }
    const figure = barChart(`Nodeset ${name}: workers busy and idle, last ${label}`, bars, (k) => colors[k]);
    figure.dataset.nodeset = name;
    return figure;
  });
}

class ClusterView {
  /** @param {string[]} dataPlanes */
  constructor(dataPlanes) {
    this.dataPlane = dataPlanes[0];
    this.rangeIndex = 0;
    this.status = el("p", { id: "live-status", "aria-live": "polite" });
    this.tables = el("div", { id: "live-tables" });
    this.charts = el("div", { class: "charts", id: "nodeset-charts" });
    this.picker = el("select", { id: "live-dataplane", onchange: (/** @type {Event} */ ev) => {
      this.dataPlane = /** @type {HTMLSelectElement} */ (ev.target).value;
      this.refresh(true);
    } }, dataPlanes.map((d) => el("option", { value: d }, d)));
    this.range = el("select", { id: "history-range", onchange: (/** @type {Event} */ ev) => {
      this.rangeIndex = Number(/** @type {HTMLSelectElement} */ (ev.target).value);
      this.loadHistory();
    } }, RANGES.map((r, i) => el("option", { value: String(i) }, `Last ${r.label}`)));
  }

  async loadLive() {
    try {
      const live = await api("GET", `/api/v1/dataplanes/${this.dataPlane}/live`);
      this.status.className = live.stale ? "error" : "muted";
      this.status.textContent = live.stale
        ? `Stale: the agent last reported ${live.ageSeconds} s ago; what follows may no longer be true.`
        : `Reported ${live.ageSeconds} s ago · refreshes every 5 s`;
      this.tables.replaceChildren(...viewTables(live.view));
    } catch (e) {
      this.status.className = "error";
      this.status.textContent = messageOf(e);
      this.tables.replaceChildren();
    }
  }

  async loadHistory() {
    const range = RANGES[this.rangeIndex];
    const to = Math.floor(Date.now() / 1000) + 1;
    try {
      const h = await api("GET", `/api/v1/dataplanes/${this.dataPlane}/nodesets/history?from=${to - range.seconds}&to=${to}`);
      this.charts.replaceChildren(...historyCharts(h, range.label));
    } catch (e) {
      this.charts.replaceChildren(el("p", { class: "error" }, `Charts: ${messageOf(e)}`));
    }
  }

  // The live view every time; the charts too when their range is short enough to move.
  refresh(all = false) {
    if (document.hidden) return;
    this.loadLive();
    if (all || RANGES[this.rangeIndex].seconds <= 6 * 3600) this.loadHistory();
  }
}

export async function clusterPage() {
  let dataPlanes;
  try {
    dataPlanes = (await api("GET", "/api/v1/dataplanes")).dataPlanes.map((/** @type {any} */ d) => d.name);
  } catch (e) {
    return showPageError("Cluster", messageOf(e));
  }
  if (!dataPlanes.length) {
    return mainArea().replaceChildren(el("h1", {}, "Cluster"), el("p", { class: "muted" }, "No data plane has reported."));
  }
  const view = new ClusterView(dataPlanes);
  mainArea().replaceChildren(el("h1", {}, "Cluster"),
    el("div", { class: "filters" }, el("label", { for: "live-dataplane" }, "Data plane", view.picker),
      el("label", { for: "history-range" }, "Charts over", view.range)),
    view.status, el("section", { "aria-label": "Nodeset charts" }, view.charts), view.tables);
  view.refresh(true);
  every(() => view.refresh(), 5000);
}
