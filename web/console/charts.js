// Charts of a project's jobs, from /jobs/stats (aggregated by the store), drawn as SVG here: no
// asset from another host. Each chart has a title for screen readers and a legend.
import { api, messageOf } from "./api.js";
import { el, svg } from "./dom.js";

const STATE_COLORS = /** @type {Record<string, string>} */ ({ COMPLETED: "#1a7f37", FAILED: "#b42318",
  CANCELLED: "#8a5a00", RUNNING: "#0a58ca", PENDING: "#6f42c1", TIMEOUT: "#d1242f", NODE_FAIL: "#cf222e",
  OUT_OF_MEMORY: "#a40e26" });
const PALETTE = ["#0a58ca", "#1a7f37", "#8a5a00", "#6f42c1", "#b42318", "#0f766e", "#9a3412", "#334155"];

/** @typedef {{label: string, parts: Array<{key: string, value: number}>}} Bar */

// Bars stacked from their parts.
/** @param {string} title @param {Bar[]} bars @param {(key: string) => string} colorOf */
function barChart(title, bars, colorOf) {
  const W = 480, H = 180, pad = 24;
  const max = Math.max(1, ...bars.map((b) => b.parts.reduce((s, p) => s + p.value, 0)));
  const bw = (W - pad) / Math.max(1, bars.length);
  const g = svg("svg", { viewBox: `0 0 ${W} ${H + 20}`, role: "img", "aria-label": title });
  bars.forEach((b, i) => {
    let y = H;
    for (const p of b.parts) {
      const h = (p.value / max) * (H - 10);
      y -= h;
      g.append(svg("rect", { x: pad + i * bw + 1, y, width: Math.max(1, bw - 2), height: h, fill: colorOf(p.key) },
        svg("title", {}, `${b.label} ${p.key}: ${Number(p.value.toFixed ? p.value.toFixed(2) : p.value)}`)));
    }
  });
  g.append(svg("text", { x: 0, y: 12, "font-size": 11 }, String(Math.round(max * 100) / 100)));
  if (bars.length) {
    g.append(svg("text", { x: pad, y: H + 16, "font-size": 11 }, bars[0].label));
    g.append(svg("text", { x: W, y: H + 16, "font-size": 11, "text-anchor": "end" }, bars[bars.length - 1].label));
  }
  const keys = [...new Set(bars.flatMap((b) => b.parts.map((p) => p.key)))];
  const legend = el("div", { class: "legend" }, keys.map((k) => {
    const s = el("span", {}, k);
    s.style.color = colorOf(k);
    return s;
  }));
  return el("figure", { class: "chart" }, el("h2", {}, title), g, legend);
}

// The last seven days of project `project`'s jobs: states, queue wait, node-hours per user.
/** @param {string} project @param {any} into */
export async function loadCharts(project, into) {
  const to = Math.floor(Date.now() / 1000) + 1, from = to - 7 * 86400;
  try {
    const s = await api("GET", `/api/v1/projects/${project}/jobs/stats?from=${from}&to=${to}&bucket=21600`);
    /** @param {number} t */
    const hour = (t) => new Date(t * 1000).toISOString().slice(5, 13).replace("T", " ") + "h";
    /** @type {string[]} */
    const users = [...new Set(s.nodeHours.map((/** @type {any} */ u) => u.user))];
    /** @param {string} u */
    const userColor = (u) => PALETTE[users.indexOf(u) % PALETTE.length];
    /** @type {number[]} */
    const days = [...new Set(s.nodeHours.map((/** @type {any} */ u) => u.day))];
    into.replaceChildren(
      barChart("Jobs per state, last 7 days (6 h buckets)",
        s.states.map((/** @type {any} */ b) => ({ label: hour(b.start),
          parts: Object.entries(b.states).map(([key, value]) => ({ key, value: Number(value) })) })),
        (k) => STATE_COLORS[k] || "#57606a"),
      barChart("Queue wait (submit → start)",
        s.queueWait.map((/** @type {any} */ w) => ({ label: w.range, parts: [{ key: w.range, value: w.jobs }] })),
        () => "#0a58ca"),
      barChart("Node-hours per user per day",
        days.map((d) => ({ label: new Date(d * 1000).toISOString().slice(5, 10),
          parts: s.nodeHours.filter((/** @type {any} */ u) => u.day === d)
            .map((/** @type {any} */ u) => ({ key: u.user, value: u.nodeHours })) })),
        userColor));
  } catch (e) {
    into.replaceChildren(el("p", { class: "error" }, `Charts: ${messageOf(e)}`));
  }
}
