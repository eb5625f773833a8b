// Run: a batch script submitted through the API. Offered only when the flag EnableHPCJobs is on
// and the project's data plane is Healthy and reports Slurm (the API decides both again on
// submit).
import { api } from "./api.js";
import { $, el, toast } from "./dom.js";
import { clearErrors, fieldMaker, fillOptions, optionInputs, readOptions, showFieldError } from "./forms.js";
import { state } from "./state.js";

// Puts a Run… button into `into` when the project may run jobs; `onSubmitted` after a submission.
/** @param {string} project @param {any} into @param {() => void} onSubmitted */
export async function runButton(project, into, onSubmitted) {
  let flags, config, planes, workspaces, templates;
  try {
    [flags, config, planes, workspaces, { templates }] = await Promise.all([
      api("GET", "/api/v1/flags"), api("GET", `/api/v1/projects/${project}`),
      api("GET", "/api/v1/dataplanes"), api("GET", `/api/v1/projects/${project}/workspaces`),
      api("GET", `/api/v1/projects/${project}/templates`)]);
  } catch {
    return;  // an unconfigured project has no data plane to run on: no button
  }
  const plane = planes.dataPlanes.find((/** @type {any} */ d) => d.name === config.dataPlane);
  if (!flags.flags.EnableHPCJobs || !plane || !plane.slurm.offered) return;
  const mine = workspaces.workspaces.filter((/** @type {any} */ w) => w.user === state.me.subject &&
    w.desired === "Running");
  const open = el("button", { type: "button", class: "primary", id: "run-button", "aria-expanded": "false" }, "Run…");
  into.replaceChildren(open);
  open.addEventListener("click", () => {
    open.setAttribute("aria-expanded", "true");
    into.replaceChildren(runForm(project, mine, templates, () => {
      into.replaceChildren(open);
      open.setAttribute("aria-expanded", "false");
      onSubmitted();
    }));
    $("#run-script").focus();
  });
}

// A template fills the script and options; what is submitted is what the form then shows.
/** @param {any[]} templates @param {any} script */
function templateSelect(templates, script) {
  const select = el("select", { id: "run-template", onchange: () => {
    const t = templates.find((x) => x.name === select.value);
    if (!t) return;
    script.value = t.script;
    fillOptions("run-", t.options);
  } }, el("option", { value: "" }, "(none)"),
  templates.map((t) => el("option", { value: t.name }, t.description ? `${t.name}: ${t.description}` : t.name)));
  return select;
}

/** @param {string} project @param {any[]} workspaces @param {any[]} templates @param {() => void} done */
function runForm(project, workspaces, templates, done) {
  /** @type {Record<string, any>} */
  const errors = {};
  const field = fieldMaker("", errors);
  const ws = el("select", { id: "run-workspace", required: true },
    workspaces.map((w) => el("option", { value: w.id }, `${w.id} (${w.phase})`)));
  const script = el("textarea", { id: "run-script", rows: 8, cols: 70, required: true, spellcheck: "false" });
  script.value = "#!/bin/bash\nsrun hostname\n";
  const result = el("p", { id: "run-result", role: "status" });
  const form = el("form", { class: "filters", id: "run-form", onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    clearErrors(errors);
    result.textContent = "";
    const options = readOptions("run-");
    try {
      const sub = await api("POST", `/api/v1/projects/${project}/jobs`, { workspace: ws.value, script: script.value, options });
      toast(`Submitted (${sub.id}); the job appears with source api once its data plane runs sbatch.`);
      done();
    } catch (e) {
      showFieldError(e, errors, result);  // the API names the field it refuses
    }
  } },
  workspaces.length ? field("workspace", "Workspace", ws)
    : el("p", { class: "error" }, "You have no running workspace in this project: launch one first (Workspaces)."),
  templates.length ? field("template", "Template", templateSelect(templates, script)) : null,
  field("script", "Batch script", script), ...optionInputs("run-", field),
  el("button", { type: "submit", class: "primary", id: "run-submit", disabled: !workspaces.length }, "Submit"),
  el("button", { type: "button", onclick: done }, "Cancel"), result);
  return el("div", { class: "detail" }, el("h2", {}, "Run a batch job"), form);
}
