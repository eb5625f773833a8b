// One job's detail under the jobs table: its timeline, usage and efficiency, its output and its
// batch script (API submissions) for its user and admins, and Cancel while it can still be
// cancelled.
import { api, messageOf } from "./api.js";
import { $, el } from "./dom.js";
import { cpuEfficiency, exitCodeText, fmtDuration, fmtTime, isLive, maxRssText } from "./format.js";
import { JobOutput } from "./job_output.js";
import { state } from "./state.js";

// A Slurm state as a coloured cell ("CANCELLED by 1001" is coloured as CANCELLED).
/** @param {string} s */
export const stateCell = (s) => el("span", { class: `state state-${(s || "").split(" ")[0]}` }, s);

// The job's own user or an admin.
/** @param {any} j */
const mayAct = (j) => j.user === state.me.subject || state.me.role === "admin";

/** @param {string} project @param {any} j */
const jobPath = (project, j) => `/api/v1/projects/${project}/jobs/${j.dataPlane}/${j.cluster}/${j.jobId}`;

// Follows a cancellation until its data plane settled it.
/** @param {string} project @param {string} id @param {any} note */
async function watchCancellation(project, id, note) {
  for (let i = 0; i < 60; i++) {
    await new Promise((r) => setTimeout(r, 2000));
    try {
      const c = await api("GET", `/api/v1/projects/${project}/cancellations/${id}`);
      if (c.state === "Pending") continue;
      note.textContent = c.state === "Done" ? `Cancelled${c.error ? ` (${c.error})` : ""}.` : `Not cancelled: ${c.error}`;
      return;
    } catch (e) {
      note.textContent = messageOf(e);
      return;
    }
  }
}

/** @param {string} project @param {any} j @param {any} note */
function cancelButton(project, j, note) {
  if (!isLive(j.state) || !mayAct(j)) return "";
  return el("button", { type: "button", id: "cancel-job", onclick: async () => {
    if (!confirm(`Cancel job ${j.jobId} (${j.name})?`)) return;
    try {
      const c = await api("POST", `${jobPath(project, j)}/cancel?submitTime=${j.submitTime}`);
      note.textContent = "Cancel requested; the data plane runs scancel shortly.";
      watchCancellation(project, c.id, note);
    } catch (e) {
      note.textContent = messageOf(e);
    }
  } }, "Cancel job");
}

/** @param {any} j */
function facts(j) {
  /** @param {string} k @param {any} v */
  const item = (k, v) => [el("dt", {}, k), el("dd", {}, v)];
  return el("dl", {},
    item("State", stateCell(j.state)),
    item("Queue wait", j.startTime ? fmtDuration(j.startTime - j.submitTime) : "—"),
    item("Elapsed", fmtDuration(j.elapsedSeconds)),
    item("CPU time", fmtDuration(j.cpuSeconds)),
    item("CPU efficiency", cpuEfficiency(j)),
    item("Max RSS", maxRssText(j)),
    item("Exit code", exitCodeText(j.exitCode)),
    item("Nodes", `${j.nodes || 0} ${j.nodeList || ""}`),
    item("TRES", j.tres || "—"),
    item("Workspace / partition", j.partition),
    item("User", j.user),
    item("Source", j.source === "api" ? "API submission" : "workspace CLI"),
    item("Data plane / cluster", `${j.dataPlane} / ${j.cluster}`));
}

// The batch script of a job submitted through the API, loaded into `box`.
/** @param {string} project @param {any} j @param {any} box */
function loadScript(project, j, box) {
  api("GET", `${jobPath(project, j)}/script?submitTime=${j.submitTime}`)
    .then((s) => box.replaceChildren(el("h2", {}, "Batch script"),
      el("p", { class: "muted" }, `sbatch ${s.sbatchArgs.join(" ")}`), el("pre", {}, s.script)))
    .catch((e) => box.replaceChildren(el("p", { class: "muted" }, messageOf(e))));
}

// Shows job `j` of `project` in `into`; `onClose` runs when the user closes it.
/** @param {any} into @param {string} project @param {any} j @param {boolean} focus @param {() => void} onClose */
export function showJobDetail(into, project, j, focus, onClose) {
  const close = el("button", { type: "button", id: "close-detail", onclick: () => {
    into.replaceChildren();
    onClose();
  } }, "Close");
  const cancelNote = el("span", { id: "cancel-note", role: "status" });
  into.replaceChildren(el("div", { class: "detail" },
    el("h2", { tabindex: -1, id: "detail-title" }, `Job ${j.jobId}: ${j.name || "(no name)"}`),
    el("ol", { class: "timeline", "aria-label": "Timeline" },
      el("li", {}, `submitted ${fmtTime(j.submitTime)}`),
      el("li", {}, `started ${fmtTime(j.startTime)}`),
      el("li", {}, `ended ${fmtTime(j.endTime)}`)),
    facts(j),
    el("div", { class: "pager" }, cancelButton(project, j, cancelNote), close, cancelNote)));
  if (mayAct(j)) {
    const output = new JobOutput(jobPath(project, j), j);
    into.firstChild.append(output.box);
    output.show("stdout");
  }
  if (j.source === "api" && mayAct(j)) {
    const box = el("section", { id: "job-script", "aria-label": "Batch script" });
    into.firstChild.append(box);
    loadScript(project, j, box);
  }
  if (focus) $("#detail-title").focus();
}
