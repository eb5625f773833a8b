// hpcplane web console: native ES modules, no framework, no build step. It speaks only the
// public REST API (/api/v1; api.js). This module starts it: the session if there is one, else
// the sign-in form, and the page the location's hash names (router.js).
import { api, messageOf, onSessionEnded } from "./api.js";
import { $ } from "./dom.js";
import { route } from "./router.js";
import { showSignIn, signedIn, signOut } from "./session.js";
import { state } from "./state.js";

onSessionEnded(showSignIn);
window.addEventListener("hashchange", route);
$("#sign-out").addEventListener("click", signOut);
$("#project-select").addEventListener("change", (/** @type {Event} */ ev) => {
  state.project = /** @type {HTMLSelectElement} */ (ev.target).value;
  route();
});

try {
  await signedIn(await api("GET", "/api/v1/session"));
} catch (e) {
  showSignIn(/** @type {any} */ (e).status === 401 ? "" : messageOf(e));
}
