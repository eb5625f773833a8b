// Pure functions of the API's data: times, sizes, Slurm's TRES strings, array tasks, queries.
// No DOM: `node --test` runs their tests (test/format.test.js).

// Unix seconds as "YYYY-MM-DD hh:mm:ss" (UTC); "—" for none.
/** @param {number | null | undefined} t */
export const fmtTime = (t) => (t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "—");

// Seconds as Slurm writes durations: "hh:mm:ss", or "d-hh:mm:ss" from a day on; "—" for none.
/** @param {number | null | undefined} s */
export function fmtDuration(s) {
  if (s === undefined || s === null || Number.isNaN(s)) return "—";
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const hms = `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}:${String(sec).padStart(2, "0")}`;
  return d ? `${d}-${hms}` : hms;
}

// Bytes in the largest unit that keeps the number at least 1 ("512 B", "1.5 MiB").
/** @param {number} b */
export function fmtBytes(b) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0, v = b;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(v < 10 && i ? 1 : 0)} ${units[i]}`;
}

// KiB the same way; "—" for none.
/** @param {number | null | undefined} k */
export const fmtKiB = (k) => (k ? fmtBytes(k * 1024) : "—");

/** @type {Record<string, number>} */
const KIB_PER_UNIT = { "": 1024, K: 1, M: 1024, G: 1024 ** 2, T: 1024 ** 3 };
// Slurm's memory request from AllocTRES ("mem=4G") in KiB, or 0. A bare number is MiB.
/** @param {string | null | undefined} tres */
export function tresMemKiB(tres) {
  const m = /(?:^|,)mem=([\d.]+)([KMGT]?)/.exec(tres || "");
  if (!m) return 0;
  return parseFloat(m[1]) * KIB_PER_UNIT[m[2]];
}

// The CPUs of AllocTRES ("cpu=4,mem=..."), or 0.
/** @param {string | null | undefined} tres */
export const tresCpus = (tres) => Number((/(?:^|,)cpu=(\d+)/.exec(tres || "") || [])[1] || 0);

/** @param {string[] | null | undefined} v */
export const listText = (v) => (v || []).join(", ");
// "a, b,,c " as ["a", "b", "c"].
/** @param {string} text */
export const listOf = (text) => text.split(",").map((x) => x.trim()).filter(Boolean);

// States in which a job may still be cancelled.
const LIVE_STATES = ["PENDING", "RUNNING", "SUSPENDED", "REQUEUED", "CONFIGURING", "COMPLETING"];
/** @param {string | null | undefined} s e.g. "CANCELLED by 1001" */
export const isLive = (s) => LIVE_STATES.includes((s || "").split(" ")[0]);

/**
 * @typedef {{jobId: number, submitTime: number, dataPlane: string, cluster: string,
 *   arrayJobId?: number, arrayTaskId?: number, state?: string}} JobKey
 */

// A page of jobs as rows: array tasks (Slurm's 123_4) next to each other become one group under
// their array (the tasks of one array share a submit time, so a page lists them together); any
// other job, or an array with one task on the page, is a row of its own.
/**
 * @template {JobKey} J
 * @param {J[]} jobs
 * @returns {Array<{job: J} | {group: string, tasks: J[]}>}
 */
export function groupArrays(jobs) {
  /** @type {Array<{job: J} | {group: string, tasks: J[]}>} */
  const rows = [];
  for (let i = 0; i < jobs.length;) {
    const j = jobs[i];
    let k = i + 1;
    if (j.arrayJobId) {
      while (k < jobs.length && jobs[k].arrayJobId === j.arrayJobId && jobs[k].cluster === j.cluster &&
        jobs[k].dataPlane === j.dataPlane) k++;
    }
    if (k - i > 1) rows.push({ group: `${j.dataPlane}/${j.cluster}/${j.arrayJobId}`, tasks: jobs.slice(i, k) });
    else rows.push({ job: j });
    i = k;
  }
  return rows;
}

// "3 COMPLETED, 1 FAILED": how many of the tasks are in each state, in order of first sight.
/** @param {Array<{state?: string}>} tasks */
export function stateCounts(tasks) {
  /** @type {Record<string, number>} */
  const counts = {};
  for (const t of tasks) counts[t.state || ""] = (counts[t.state || ""] || 0) + 1;
  return Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(", ");
}

/** @param {JobKey} a @param {JobKey} b */
export const sameJob = (a, b) => a.jobId === b.jobId && a.submitTime === b.submitTime && a.cluster === b.cluster &&
  a.dataPlane === b.dataPlane;

// The query of the jobs list: the filters that are set (dates "YYYY-MM-DD" as unix seconds at
// 00:00 UTC), then `extra`'s set values.
/** @param {Record<string, string>} filters @param {Record<string, string | null | undefined>} [extra] */
export function jobsQuery(filters, extra = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) {
    if (!v) continue;
    if (k === "from" || k === "to") q.set(k, String(Math.floor(Date.parse(v + "T00:00:00Z") / 1000)));
    else q.set(k, v);
  }
  for (const [k, v] of Object.entries(extra)) if (v) q.set(k, v);
  return q;
}

/** @typedef {{tres?: string, elapsedSeconds?: number, cpuSeconds?: number, maxRssKiB?: number, exitCode?: string}} JobUsage */

// CPU time over the CPUs' wall time, as "87.5 %"; "—" when either is unknown.
/** @param {JobUsage} j */
export function cpuEfficiency(j) {
  const cpus = tresCpus(j.tres);
  return j.elapsedSeconds && cpus ? `${((100 * (j.cpuSeconds || 0)) / (j.elapsedSeconds * cpus)).toFixed(1)} %` : "—";
}

// The peak memory, and what share of the request it was when the request is known.
/** @param {JobUsage} j */
export function maxRssText(j) {
  if (!j.maxRssKiB) return "—";
  const requested = tresMemKiB(j.tres);
  if (!requested) return fmtKiB(j.maxRssKiB);
  return `${fmtKiB(j.maxRssKiB)} of ${fmtKiB(requested)} requested (${((100 * j.maxRssKiB) / requested).toFixed(1)} %)`;
}

// Slurm's "code:signal" as "code" or "code (signal N)".
/** @param {string | null | undefined} exitCode */
export function exitCodeText(exitCode) {
  const [code, signal] = (exitCode || ":").split(":");
  return `${code || "—"}${signal && signal !== "0" ? ` (signal ${signal})` : ""}`;
}
