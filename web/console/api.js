// The public REST API (/api/v1), the only thing the console talks to. Signed in through a
// session cookie (HttpOnly: this script never sees the token); state-changing requests carry
// the session's CSRF token.
import { state } from "./state.js";

export class ApiError extends Error {
  /** @param {number} status @param {any} body */
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    /** @type {string | undefined} */
    this.field = body && body.error && body.error.field;
  }
}

/** @type {(message: string) => void} */
let sessionEnded = () => {};
// Who is told when the server answers 401 to anything but the session itself (app.js: the
// sign-in form).
/** @param {(message: string) => void} fn */
export function onSessionEnded(fn) {
  sessionEnded = fn;
}

/**
 * @param {string} method
 * @param {string} path
 * @param {any} [body]
 * @returns {Promise<any>}
 */
export async function api(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET") headers["X-CSRF-Token"] = state.csrf;
  const send = () => fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let res;
  try {
    res = await send();
  } catch (e) {
    // A request that never got an answer (fetch rejects only then: the browser dropped it, as
    // Chromium does to every request in flight when an address of the host changes). A GET
    // changes nothing, so it is sent once more; anything else is the caller's to decide.
    if (method !== "GET") throw e;
    res = await send();
  }
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    if (res.status === 401 && path !== "/api/v1/session") sessionEnded("Your session ended; sign in again.");
    throw new ApiError(res.status, data);
  }
  return data;
}

// The message of anything a handler caught.
/** @param {unknown} e */
export const messageOf = (e) => (e instanceof Error ? e.message : String(e));
