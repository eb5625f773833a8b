// Unit tests of the console's pure functions (web/console/format.js and router.js's pageOf),
// run by `node --test` (ctest: console_unit).
import assert from "node:assert/strict";
import test from "node:test";

import {
  cpuEfficiency, exitCodeText, fmtBytes, fmtDuration, fmtKiB, fmtTime, groupArrays, isLive, jobsQuery, listOf, listText,
  maxRssText, sameJob, stateCounts, tresCpus, tresMemKiB,
} from "../console/format.js";

test("times are UTC seconds, and none is a dash", () => {
  assert.equal(fmtTime(0), "—");
  assert.equal(fmtTime(null), "—");
  assert.equal(fmtTime(1700000000), "2023-11-14 22:13:20");
});

test("durations read as Slurm writes them, days from a day on", () => {
  assert.equal(fmtDuration(0), "00:00:00");
  assert.equal(fmtDuration(59), "00:00:59");
  assert.equal(fmtDuration(3661), "01:01:01");
  assert.equal(fmtDuration(86400 + 7200 + 5), "1-02:00:05");
  assert.equal(fmtDuration(undefined), "—");
  assert.equal(fmtDuration(null), "—");
});

test("sizes take the largest unit, one decimal below ten", () => {
  assert.equal(fmtKiB(0), "—");
  assert.equal(fmtKiB(512), "512 KiB");
  assert.equal(fmtKiB(1536), "1.5 MiB");
  assert.equal(fmtKiB(4 * 1024 * 1024), "4.0 GiB");
  assert.equal(fmtKiB(20 * 1024 * 1024), "20 GiB");
  assert.equal(fmtKiB(3 * 1024 ** 3), "3.0 TiB");
  assert.equal(fmtKiB(3 * 1024 ** 4), "3072 TiB", "TiB is the largest unit");
  assert.equal(fmtBytes(0), "0 B", "an empty file has a size");
  assert.equal(fmtBytes(1023), "1023 B");
  assert.equal(fmtBytes(1536), "1.5 KiB");
  assert.equal(fmtBytes(3 * 1024 * 1024), "3.0 MiB");
});

test("TRES strings give CPUs and memory in KiB (a bare number is MiB)", () => {
  assert.equal(tresCpus("cpu=4,mem=8G,node=1"), 4);
  assert.equal(tresCpus("billing=2,cpu=16"), 16);
  assert.equal(tresCpus("gres/gpucpu=3"), 0, "only the cpu key counts");
  assert.equal(tresCpus(""), 0);
  assert.equal(tresMemKiB("cpu=1,mem=4G"), 4 * 1024 * 1024);
  assert.equal(tresMemKiB("mem=512M"), 512 * 1024);
  assert.equal(tresMemKiB("mem=100"), 100 * 1024);
  assert.equal(tresMemKiB("mem=1.5T"), 1.5 * 1024 ** 3);
  assert.equal(tresMemKiB("cpu=2"), 0);
  assert.equal(tresMemKiB(undefined), 0);
});

test("efficiency, peak memory and exit codes of a job", () => {
  assert.equal(cpuEfficiency({ tres: "cpu=4", elapsedSeconds: 100, cpuSeconds: 350 }), "87.5 %");
  assert.equal(cpuEfficiency({ tres: "cpu=4", elapsedSeconds: 0, cpuSeconds: 0 }), "—");
  assert.equal(cpuEfficiency({ tres: "", elapsedSeconds: 10, cpuSeconds: 10 }), "—");
  assert.equal(maxRssText({ maxRssKiB: 1024 * 1024, tres: "mem=2G" }), "1.0 GiB of 2.0 GiB requested (50.0 %)");
  assert.equal(maxRssText({ maxRssKiB: 2048 }), "2.0 MiB");
  assert.equal(maxRssText({}), "—");
  assert.equal(exitCodeText("0:0"), "0");
  assert.equal(exitCodeText("1:0"), "1");
  assert.equal(exitCodeText("0:9"), "0 (signal 9)");
  assert.equal(exitCodeText(""), "—");
});

test("lists are typed with commas and shown with them", () => {
  assert.deepEqual(listOf(" astro, bio,,  chem "), ["astro", "bio", "chem"]);
  assert.deepEqual(listOf(""), []);
  assert.equal(listText(["a", "b"]), "a, b");
  assert.equal(listText(undefined), "");
});

test("a job may be cancelled only while it is live", () => {
  assert.ok(isLive("PENDING"));
  assert.ok(isLive("RUNNING"));
  assert.ok(!isLive("CANCELLED by 1001"));
  assert.ok(!isLive("COMPLETED"));
  assert.ok(!isLive(undefined));
});

const job = (jobId, extra = {}) => ({ jobId, submitTime: 100, dataPlane: "dp", cluster: "c", state: "COMPLETED", ...extra });

test("array tasks next to each other are grouped under their array; lone ones stay rows", () => {
  const rows = groupArrays([
    job(10),
    job(11, { arrayJobId: 11, arrayTaskId: 0 }),
    job(12, { arrayJobId: 11, arrayTaskId: 1, state: "FAILED" }),
    job(13, { arrayJobId: 11, arrayTaskId: 2 }),
    job(20, { arrayJobId: 20, arrayTaskId: 0 }),
    job(30, { arrayJobId: 11, arrayTaskId: 3, cluster: "other" }),
  ]);
  assert.equal(rows.length, 4);
  assert.deepEqual(rows[0], { job: job(10) });
  assert.ok("group" in rows[1]);
  assert.equal(rows[1].group, "dp/c/11");
  assert.deepEqual(rows[1].tasks.map((t) => t.jobId), [11, 12, 13]);
  assert.equal(stateCounts(rows[1].tasks), "2 COMPLETED, 1 FAILED");
  assert.ok("job" in rows[2], "an array with one task on the page is a plain row");
  assert.ok("job" in rows[3], "the same array id on another cluster is another array");
  assert.deepEqual(groupArrays([]), []);
});

test("a job is the same job by its key, whatever else changed", () => {
  assert.ok(sameJob(job(1), job(1, { state: "RUNNING" })));
  assert.ok(!sameJob(job(1), job(1, { submitTime: 200 })));
  assert.ok(!sameJob(job(1), job(1, { cluster: "x" })));
});

test("the jobs query carries set filters, dates as UTC midnight, and set extras", () => {
  const q = jobsQuery({ user: "ann", state: "", from: "2026-01-02", to: "", name: "train" },
    { limit: "50", cursor: null });
  assert.equal(q.get("user"), "ann");
  assert.equal(q.has("state"), false);
  assert.equal(q.get("from"), String(Date.UTC(2026, 0, 2) / 1000));
  assert.equal(q.get("name"), "train");
  assert.equal(q.get("limit"), "50");
  assert.equal(q.has("cursor"), false);
});
