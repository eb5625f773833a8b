// What the pages share: who is signed in, the session's CSRF token, the selected project, and
// the timer of the page's periodic refresh (one at a time: a page change clears it).

/** @type {{me: any, csrf: string, project: string, refreshTimer: number}} */
export const state = { me: null, csrf: "", project: "", refreshTimer: 0 };

// The selector's value for every project at once (admins): not a valid project name.
export const ALL_PROJECTS = "*";

// Where a project's jobs are listed: every project's for ALL_PROJECTS.
/** @param {string} project */
export function jobsBase(project) {
  return project === ALL_PROJECTS ? "/api/v1/jobs" : `/api/v1/projects/${project}/jobs`;
}

// Stops the open page's refresh; a page that refreshes starts its own with `every`.
export function stopRefresh() {
  clearInterval(state.refreshTimer);
  state.refreshTimer = 0;
}

/** @param {() => void} fn @param {number} ms */
export function every(fn, ms) {
  stopRefresh();
  state.refreshTimer = setInterval(fn, ms);
}

// The project a link names (#/projects/NAME/...), if the caller may open it; else their first
// project, or every project for an admin who has none configured.
/** @param {string} hash @param {string[]} projects @param {boolean} admin */
export function projectFromHash(hash, projects, admin) {
  const named = /^#\/projects\/([a-z][a-z0-9-]*|\*)/.exec(hash);
  if (named && (projects.includes(named[1]) || (admin && named[1] === ALL_PROJECTS))) return named[1];
  return projects[0] || (admin ? ALL_PROJECTS : "");
}
