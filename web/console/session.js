// Signing in and out: a token pasted once is exchanged for a session (an HttpOnly cookie and a
// CSRF token); the page never keeps the token.
import { ApiError, api, messageOf } from "./api.js";
import { $, el, mainArea } from "./dom.js";
import { route } from "./router.js";
import { ALL_PROJECTS, projectFromHash, state, stopRefresh } from "./state.js";

/** @param {string} [message] */
export function showSignIn(message) {
  stopRefresh();
  state.me = null;
  $("#nav").hidden = true;
  $("#who").hidden = true;
  const error = el("p", { class: "error", role: "alert", id: "signin-error" }, message || "");
  const token = el("input", { id: "token", type: "password", autocomplete: "off", required: true, "aria-describedby": "signin-error" });
  const form = el("form", { class: "signin", onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    error.textContent = "";
    try {
      const me = await api("POST", "/api/v1/session", { token: token.value });
      token.value = "";
      await signedIn(me);
    } catch (e) {
      error.textContent = messageOf(e);
    }
  } },
  el("label", { for: "token" }, "API token", token),
  el("button", { class: "primary", type: "submit", id: "sign-in" }, "Sign in"));
  mainArea().replaceChildren(el("h1", {}, "Sign in"),
    el("p", { class: "muted" }, "Paste an API token (hpcplane tokens create). It is exchanged for a session; the page never keeps it."),
    form, error);
  token.focus();
}

// The session `me` (GET or POST /session): who is signed in, their projects in the selector,
// the admin pages for admins, then the page the hash names.
/** @param {any} me */
export async function signedIn(me) {
  state.me = me;
  state.csrf = me.csrfToken || "";
  $("#who-name").textContent = `${me.subject} (${me.role})`;
  $("#who").hidden = false;
  $("#nav").hidden = false;
  for (const a of document.querySelectorAll("[data-admin]")) /** @type {HTMLElement} */ (a).hidden = me.role !== "admin";
  const { projects } = await api("GET", "/api/v1/projects");
  const select = $("#project-select");
  const admin = me.role === "admin";
  select.replaceChildren(...(admin ? [el("option", { value: ALL_PROJECTS }, "All projects")] : []),
    ...projects.map((/** @type {string} */ p) => el("option", { value: p }, p)));
  state.project = projectFromHash(location.hash, projects, admin);
  select.value = state.project;
  if (!location.hash || location.hash === "#/") location.hash = "#/jobs";
  else route();
}

// Ends the session on the server: the DELETE is sent again when it got no answer (the browser
// drops requests in flight when the host's network changes), since a session believed ended
// that the server still honours is one the next user of this browser inherits.
export async function signOut() {
  let ended = false;
  for (let attempt = 0; attempt < 3; ++attempt) {
    try {
      await api("DELETE", "/api/v1/session");
      ended = true;
    } catch (e) {
      ended = e instanceof ApiError && e.status === 401;  // gone already
      if (e instanceof ApiError) break;  // answered: sending it again changes nothing
    }
    if (ended) break;
  }
  if (!ended) {
    // Still signed in as far as the server knows: say so where the user is, and stay.
    document.getElementById("signout-error")?.remove();
    mainArea().prepend(el("p", { class: "error", role: "alert", id: "signout-error" },
      "Signing out failed: the server could not be reached, and your session is still valid. Sign out again."));
    return;
  }
  state.csrf = "";
  history.replaceState(null, "", "#/");
  showSignIn("Signed out.");
}
