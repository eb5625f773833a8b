// The selected project's job templates: listed with Edit and Delete, and a form that creates or
// replaces one (PUT /projects/{p}/templates/{name}); members pick them in the Run form.
import { api, messageOf } from "./api.js";
import { el, headerRow, tableWrap, toast } from "./dom.js";
import { clearErrors, fieldMaker, fillOptions, optionInputs, readOptions, showFieldError } from "./forms.js";
import { fmtTime } from "./format.js";

const COLUMNS = ["Name", "Description", "Options", "By", "Updated", ""];

/** @param {any} t @param {(t: any) => void} edit @param {() => Promise<void>} remove */
const templateRow = (t, edit, remove) => el("tr", {}, el("td", {}, t.name), el("td", {}, t.description),
  el("td", {}, Object.entries(t.options).map(([k, v]) => `${k}=${v}`).join(" ")),
  el("td", {}, t.updatedBy), el("td", {}, fmtTime(t.updatedAt)),
  el("td", {}, el("button", { type: "button", onclick: () => edit(t) }, "Edit"), " ",
    el("button", { type: "button", "aria-label": `Delete template ${t.name}`, onclick: remove }, "Delete")));

/** @param {any} into @param {string} project */
export async function templatesAdmin(into, project) {
  const heading = el("h2", { id: "templates-heading" }, `Job templates of ${project || "—"}`);
  if (!project) return into.replaceChildren(heading, el("p", { class: "muted" }, "Pick a project in the selector above (or configure one) to see its templates."));
  let templates;
  try {
    ({ templates } = await api("GET", `/api/v1/projects/${project}/templates`));
  } catch (e) {
    return into.replaceChildren(heading, el("p", { class: "error", role: "alert" }, messageOf(e)));
  }
  /** @type {Record<string, any>} */
  const errors = {};
  const field = fieldMaker("tpl-", errors);
  const name = el("input", { id: "tpl-name", required: true, size: 20, pattern: "[a-z][a-z0-9\\-]{0,62}" });
  const description = el("input", { id: "tpl-description", size: 40, maxlength: 500 });
  const script = el("textarea", { id: "tpl-script", rows: 6, cols: 70, required: true, spellcheck: "false" });
  script.value = "#!/bin/bash\nsrun hostname\n";
  const result = el("p", { id: "tpl-result", role: "status" });
  /** @param {any} t */
  const edit = (t) => {
    name.value = t.name;
    description.value = t.description;
    script.value = t.script;
    fillOptions("tpl-", t.options);
    name.focus();
  };
  /** @param {any} t */
  const remove = (t) => async () => {
    if (!confirm(`Delete template ${t.name} of ${project}?`)) return;
    try { await api("DELETE", `/api/v1/projects/${project}/templates/${t.name}`); templatesAdmin(into, project); }
    catch (e) { toast(messageOf(e)); }
  };
  const rows = templates.map((/** @type {any} */ t) => templateRow(t, edit, remove(t)));
  const form = el("form", { class: "filters", id: "tpl-form", onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    clearErrors(errors);
    result.textContent = "";
    try {
      await api("PUT", `/api/v1/projects/${project}/templates/${encodeURIComponent(name.value.trim())}`,
        { description: description.value, script: script.value, options: readOptions("tpl-") });
      toast(`Template ${name.value.trim()} saved.`);
      templatesAdmin(into, project);
    } catch (e) {
      showFieldError(e, errors, result);
    }
  } }, field("name", "Name", name), field("description", "Description", description),
  field("script", "Batch script", script), ...optionInputs("tpl-", field),
  el("button", { type: "submit", class: "primary", id: "tpl-save" }, "Save template"), result);
  into.replaceChildren(heading,
    tableWrap("Job templates", el("table", { id: "templates-table" }, headerRow(COLUMNS),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: COLUMNS.length, class: "muted" }, "No templates yet."))))),
    form);
}
