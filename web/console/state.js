// What the pages share: who is signed in, the session's CSRF token, the selected project, and
// the timer of the page's periodic refresh (one at a time: a page change clears it).

/** @type {{me: any, csrf: string, project: string, refreshTimer: number}} */
export const state = { me: null, csrf: "", project: "", refreshTimer: 0 };

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
