// What the console's forms share: labelled controls with an error line each, the batch options
// of the Run form and of templates, and showing the API's refusal next to the field it names.
import { $, el } from "./dom.js";

// The batch options the API takes, with their labels.
export const RUN_OPTIONS = [["jobName", "Job name"], ["nodes", "Nodes"], ["ntasks", "Tasks"],
  ["cpusPerTask", "CPUs per task"], ["mem", "Memory (e.g. 4G)"], ["time", "Time limit (e.g. 01:00:00)"],
  ["array", "Array (e.g. 0-9)"], ["output", "Output file"], ["error", "Error file"]];

/** @typedef {(id: string, label: string, control: any) => any} FieldMaker */

// Labelled controls whose error line the API's refusal of their field fills: `errors` maps a
// field key (script, opt-nodes, ...) to that line.
/** @param {string} prefix @param {Record<string, any>} errors @returns {FieldMaker} */
export function fieldMaker(prefix, errors) {
  return (id, label, control) => {
    errors[id] = el("span", { class: "error", id: `${prefix}err-${id}`, role: "alert" });
    control.setAttribute("aria-describedby", `${prefix}err-${id}`);
    return el("label", { for: control.id }, label, control, errors[id]);
  };
}

// The option inputs `${idPrefix}opt-<key>`.
/** @param {string} idPrefix @param {FieldMaker} field */
export const optionInputs = (idPrefix, field) => RUN_OPTIONS.map(([k, label]) =>
  field(`opt-${k}`, label, el("input", { id: `${idPrefix}opt-${k}`, name: k, size: 12 })));

// The option inputs read back as the API's options object (empty ones left out).
/** @param {string} idPrefix */
export function readOptions(idPrefix) {
  /** @type {Record<string, string>} */
  const options = {};
  for (const [k] of RUN_OPTIONS) {
    const v = $(`#${idPrefix}opt-${k}`).value.trim();
    if (v) options[k] = v;
  }
  return options;
}

/** @param {string} idPrefix @param {Record<string, any> | null | undefined} options */
export function fillOptions(idPrefix, options) {
  for (const [k] of RUN_OPTIONS) $(`#${idPrefix}opt-${k}`).value = options && options[k] !== undefined ? options[k] : "";
}

// Shows an ApiError next to the field it names, else in `result`.
/** @param {any} e @param {Record<string, any>} errors @param {any} result */
export function showFieldError(e, errors, result) {
  const key = e.field && e.field.startsWith("options.") ? `opt-${e.field.slice(8)}` : e.field;
  if (key && errors[key]) errors[key].textContent = e.message;
  else result.textContent = e.message;
  result.className = "error";
}

// Clears every error line of a form.
/** @param {Record<string, any>} errors */
export function clearErrors(errors) {
  for (const e of Object.values(errors)) e.textContent = "";
}
