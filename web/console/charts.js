// Charts of a project's jobs, from /jobs/stats (aggregated by the store), drawn as SVG here: no
// asset from another host. Each chart has a title for screen readers and a legend.
import { api, messageOf } from "./api.js";
import { el, svg } from "./dom.js";

const STATE_COLORS = /** @type {Record<string, string>} */ ({ COMPLETED: "#1a7f37", FAILED: "#b42318",
  CANCELLED: "#8a5a00", RUNNING: "#0a58ca", PENDING: "#6f42c1", TIMEOUT: "#d1242f", NODE_FAIL: "#cf222e",
  OUT_OF_MEMORY: "#a40e26" });
// Queue-wait ranges from short (light) to long (dark), in the order the API gives them.
const WAIT_COLORS = ["#9ec5fe", "#6ea8fe", "#3d8bfd", "#0a58ca", "#084298", "#052c65"];
const PALETTE = ["#0a58ca", "#1a7f37", "#8a5a00", "#6f42c1", "#b42318", "#0f766e", "#9a3412", "#334155"];

/** @typedef {{label: string, parts: Array<{key: string, value: number}>}} Bar */

// Bars stacked from their parts.
/** @param {string} title @param {Bar[]} bars @param {(key: string) => string} colorOf */
export function barChart(title, bars, colorOf) {
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
  // A swatch of each series' color beside its name in the text color: names stay readable
  // whatever the color (light ones would fail the contrast a reader needs).
  const legend = el("div", { class: "legend" }, keys.map((k) => {
    const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
    swatch.style.background = colorOf(k);
    return el("span", {}, swatch, k);
  }));
  // Each bar's total, in order, for readers of the page's data (and its tests).
  const totals = bars.map((b) => b.parts.reduce((s, p) => s + p.value, 0)).join(",");
  return el("figure", { class: "chart", "data-totals": totals }, el("h2", {}, title), g, legend);
}

// The ranges the charts offer: label, length and bucket (seconds; whole hours or days where they
// can be, so the store answers from its hourly rollup).
export const RANGES = [
  { label: "1 hour", seconds: 3600, bucket: 300 },
  { label: "6 hours", seconds: 6 * 3600, bucket: 1800 },
  { label: "24 hours", seconds: 86400, bucket: 3600 },
  { label: "7 days", seconds: 7 * 86400, bucket: 21600 },
  { label: "30 days", seconds: 30 * 86400, bucket: 86400 },
  { label: "90 days", seconds: 90 * 86400, bucket: 86400 },
];
const DEFAULT_RANGE = 3;

/** @param {number} t @param {number} bucket */
function bucketLabel(t, bucket) {
  const iso = new Date(t * 1000).toISOString();
  return bucket < 86400 ? iso.slice(5, 16).replace("T", " ") : iso.slice(5, 10);
}

/** @param {any} s @param {{label: string, bucket: number}} range @param {boolean} all */
function drawStats(s, range, all) {
  // Node-hours per user within a project, per project across all of them.
  const whoOf = (/** @type {any} */ u) => (all ? u.project : u.user);
  /** @type {string[]} */
  const who = [...new Set(s.nodeHours.map(whoOf))];
  /** @param {string} u */
  const whoColor = (u) => PALETTE[who.indexOf(u) % PALETTE.length];
  /** @type {number[]} */
  const days = [...new Set(s.nodeHours.map((/** @type {any} */ u) => u.day))];
  /** @type {string[]} */
  const ranges = s.queueWait.map((/** @type {any} */ w) => w.range);
  return [
    barChart(`Jobs per state, last ${range.label}`,
      s.states.map((/** @type {any} */ b) => ({ label: bucketLabel(b.start, range.bucket),
        parts: Object.entries(b.states).map(([key, value]) => ({ key, value: Number(value) })) })),
      (k) => STATE_COLORS[k] || "#57606a"),
    barChart("Queue wait (submit → start)",
      s.queueWait.map((/** @type {any} */ w) => ({ label: w.range, parts: [{ key: w.range, value: w.jobs }] })),
      () => "#0a58ca"),
    barChart(`Queue wait over time, last ${range.label} (jobs that started, by wait)`,
      s.states.map((/** @type {any} */ b) => ({ label: bucketLabel(b.start, range.bucket),
        parts: ranges.map((r) => ({ key: r, value: Number((b.waits || {})[r] || 0) })) })),
      (k) => WAIT_COLORS[ranges.indexOf(k) % WAIT_COLORS.length]),
    barChart(`Node-hours per ${all ? "project" : "user"} per day`,
      days.map((d) => ({ label: new Date(d * 1000).toISOString().slice(5, 10),
        parts: s.nodeHours.filter((/** @type {any} */ u) => u.day === d)
          .map((/** @type {any} */ u) => ({ key: whoOf(u), value: u.nodeHours })) })),
      whoColor)];
}

// Charts of the jobs under `base` (a project's, or every project's with `all`) over a range the
// user picks, from an hour to 90 days.
/** @param {string} base @param {boolean} all @param {any} into */
export function loadCharts(base, all, into) {
  const select = el("select", { id: "chart-range" },
    RANGES.map((r, i) => el("option", { value: String(i), selected: i === DEFAULT_RANGE ? "" : null }, `Last ${r.label}`)));
  const figures = el("div", { class: "charts", id: "chart-figures" });
  const draw = async () => {
    const range = RANGES[Number(select.value)] || RANGES[DEFAULT_RANGE];
    const to = Math.floor(Date.now() / 1000) + 1, from = to - range.seconds;
    try {
      const s = await api("GET", `${base}/stats?from=${from}&to=${to}&bucket=${range.bucket}`);
      figures.replaceChildren(...drawStats(s, range, all));
    } catch (e) {
      figures.replaceChildren(el("p", { class: "error" }, `Charts: ${messageOf(e)}`));
    }
  };
  select.addEventListener("change", draw);
  into.replaceChildren(el("label", { for: "chart-range" }, "Charts over ", select), figures);
  return draw();
}
