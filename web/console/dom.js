// Small DOM helpers. Text from the API is always set as textContent, never parsed as HTML.

/** @param {string} sel @returns {any} */
export const $ = (sel) => document.querySelector(sel);

// The page's main area.
/** @returns {HTMLElement} */
export const mainArea = () => $("#main");

/**
 * An element with attributes (on* are listeners; false, null and undefined are left out) and
 * children (nodes, or anything else as text).
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...any} children
 * @returns {any}
 */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
/**
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...any} children
 * @returns {SVGElement}
 */
export function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// A message in the status line for five seconds.
/** @param {string} msg */
export function toast(msg) {
  $("#toast").textContent = msg;
  setTimeout(() => { if ($("#toast").textContent === msg) $("#toast").textContent = ""; }, 5000);
}

// A page's heading and a failure in place of its content.
/** @param {string} title @param {string} message */
export function showPageError(title, message) {
  mainArea().replaceChildren(el("h1", {}, title), el("p", { class: "error", role: "alert" }, message));
}

// A page's heading and "Loading…" while its data comes.
/** @param {string} title */
export function showLoading(title) {
  mainArea().replaceChildren(el("h1", {}, title), el("p", { class: "muted" }, "Loading…"));
}

// A table in a box that scrolls sideways on narrow screens: focusable, so that a keyboard can
// scroll it too, and named for screen readers.
/** @param {string} label @param {any} table */
export const tableWrap = (label, table) =>
  el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": label }, table);

// A table's header row of column names.
/** @param {string[]} names */
export const headerRow = (names) => el("thead", {}, el("tr", {}, names.map((h) => el("th", { scope: "col" }, h))));

// Activates on Enter and Space, as a button does, for a focusable row.
/** @param {() => void} open */
export const activateOnKeys = (open) => (/** @type {KeyboardEvent} */ ev) => {
  if (ev.key === "Enter" || ev.key === " ") {
    ev.preventDefault();
    open();
  }
};
