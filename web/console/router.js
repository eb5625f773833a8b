// Which page the location's hash names (#/jobs, #/workspaces, #/cluster, #/dataplanes, #/admin), shown in
// the main area with the navigation marking it. Project pages need a project.
import { adminPage } from "./admin_page.js";
import { clusterPage } from "./cluster_page.js";
import { dataPlanesPage } from "./dataplanes_page.js";
import { el, mainArea } from "./dom.js";
import { jobsPage } from "./jobs_page.js";
import { ALL_PROJECTS, state, stopRefresh } from "./state.js";
import { workspacesPage } from "./workspaces_page.js";

// project: the page shows one project (the selected one); all: it can show every project's.
/** @type {Record<string, {show: () => unknown, project: boolean, all?: boolean}>} */
const PAGES = {
  jobs: { show: jobsPage, project: true, all: true },
  workspaces: { show: workspacesPage, project: true },
  cluster: { show: clusterPage, project: false },
  dataplanes: { show: dataPlanesPage, project: false },
  admin: { show: adminPage, project: false },
};

// "#/workspaces?x" -> "workspaces"; anything unknown is the jobs page.
/** @param {string} hash */
export function pageOf(hash) {
  const name = hash.replace(/^#\//, "").split(/[/?]/)[0];
  return name in PAGES ? name : "jobs";
}

function noProject() {
  mainArea().replaceChildren(el("h1", {}, "No project"),
    el("p", {}, "Your token belongs to no project. An admin adds you to one (hpcplane tokens create --project …)."));
}

function pickProject() {
  mainArea().replaceChildren(el("h1", {}, "Pick a project"),
    el("p", {}, "Workspaces belong to one project: pick it in the project selector above."));
}

export function route() {
  stopRefresh();
  if (!state.me) return;
  const page = pageOf(location.hash);
  for (const a of document.querySelectorAll("nav a[data-page]")) {
    if (/** @type {HTMLElement} */ (a).dataset.page === page) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const { show, project, all } = PAGES[page];
  if (project && !state.project) return noProject();
  if (project && state.project === ALL_PROJECTS && !all) return pickProject();
  show();
}
