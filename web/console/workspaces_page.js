// A project's workspaces: a launch form from the project's configuration, and the table. While
// a workspace is on its way (Pending, Stopping) its row follows it every 3 s; the launch form
// above is left as the user is filling it.
import { api, messageOf } from "./api.js";
import { el, headerRow, mainArea, showPageError, tableWrap, toast } from "./dom.js";
import { every, state, stopRefresh } from "./state.js";

const COLUMNS = ["Id", "User", "Tier", "Data plane", "Phase", "Message", "Max workers", "Open a shell", ""];

/** @param {any} w */
const moving = (w) => w.phase === "Pending" || w.phase === "Stopping" ||
  (w.desired === "Stopped" && w.phase !== "Stopped" && w.phase !== "Failed");

/** @param {string} project @param {any} w @param {() => void} reload */
function stopButton(project, w, reload) {
  const mine = w.user === state.me.subject || state.me.role === "admin";
  if (!mine || w.desired !== "Running") return "";
  return el("button", { type: "button", id: `stop-${w.id}`, onclick: async () => {
    if (!confirm(`Stop workspace ${w.id}? Its login pod and idle workers go; running jobs finish first.`)) return;
    try {
      await api("DELETE", `/api/v1/projects/${project}/workspaces/${w.id}`);
      toast(`Workspace ${w.id} is stopping.`);
      reload();
    } catch (e) { toast(messageOf(e)); }
  } }, "Stop");
}

// A terminal in the browser and JupyterLab (when the workspace's environment has it) for the
// workspace's own user while it is Ready, each in a new tab; the CLI command for everyone else.
/** @param {string} project @param {any} w */
function shellCell(project, w) {
  const command = el("code", {}, `hpcplane workspace exec ${w.id} -- bash`);
  if (w.user !== state.me.subject || w.phase !== "Ready" || w.desired !== "Running") return command;
  return [el("a", { href: `/terminal#/projects/${project}/workspaces/${w.id}`, target: "_blank",
    rel: "noopener", id: `terminal-${w.id}`, class: "button" }, "Terminal"),
  " ", el("a", { href: `/projects/${project}/workspaces/${w.id}/lab/lab`, target: "_blank", rel: "noopener",
    id: `lab-${w.id}`, class: "button" }, "JupyterLab"), " or ", command];
}

/** @param {string} project @param {any} body */
async function loadWorkspaces(project, body) {
  const { workspaces } = await api("GET", `/api/v1/projects/${project}/workspaces`);
  const reload = () => { loadWorkspaces(project, body).catch((e) => toast(messageOf(e))); };
  const rows = workspaces.map((/** @type {any} */ w) => el("tr", { "data-workspace": w.id }, el("td", {}, w.id),
    el("td", {}, w.user), el("td", {}, w.tier), el("td", {}, w.dataPlane), el("td", { class: "phase" }, w.phase),
    el("td", {}, w.message || ""), el("td", {}, String(w.maxWorkers)),
    el("td", {}, shellCell(project, w)), el("td", {}, stopButton(project, w, reload))));
  body.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: COLUMNS.length, class: "muted" }, "No workspaces."))]));
  stopRefresh();
  if (workspaces.some(moving)) every(() => loadWorkspaces(project, body).catch(stopRefresh), 3000);
}

// A launch form from the project's configuration (its tiers and worker limit).
/** @param {string} project */
async function launchForm(project) {
  let config;
  try {
    config = await api("GET", `/api/v1/projects/${project}`);
  } catch (e) {
    return el("p", { class: "muted" }, messageOf(e));
  }
  const tier = el("select", { id: "launch-tier", name: "tier" },
    config.tiers.map((/** @type {string} */ t) => el("option", { value: t, selected: t === config.defaultTier }, t)));
  const workers = el("input", { id: "launch-workers", name: "maxWorkers", type: "number", min: 1,
    max: config.maxWorkers || undefined, value: Math.min(2, config.maxWorkers || 2) });
  const error = el("p", { class: "error", role: "alert", id: "launch-error" });
  return el("form", { class: "filters", id: "launch-form", "aria-label": "Launch a workspace",
    onsubmit: async (/** @type {Event} */ ev) => {
      ev.preventDefault();
      error.textContent = "";
      try {
        const w = await api("POST", `/api/v1/projects/${project}/workspaces`, { tier: tier.value, maxWorkers: Number(workers.value) });
        toast(`Workspace ${w.id} launched on ${w.dataPlane}.`);
        workspacesPage();
      } catch (e) {
        error.textContent = messageOf(e);
      }
    } },
  el("label", { for: "launch-tier" }, "Tier", tier), el("label", { for: "launch-workers" }, "Max workers", workers),
  el("button", { type: "submit", class: "primary", id: "launch-submit" }, "Launch workspace"), error);
}

export async function workspacesPage() {
  const project = state.project;
  const title = `Workspaces — ${project}`;
  mainArea().replaceChildren(el("h1", {}, title), el("p", { class: "muted" }, "Loading…"));
  const body = el("tbody", {});
  try {
    const form = await launchForm(project);
    await loadWorkspaces(project, body);
    mainArea().replaceChildren(el("h1", {}, title), form,
      tableWrap("Workspaces", el("table", { id: "workspaces-table" }, headerRow(COLUMNS), body)));
  } catch (e) {
    showPageError(title, messageOf(e));
  }
}
