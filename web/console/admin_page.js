// The admin page: feature flags, the selected project's configuration and job templates, and
// API tokens (created here, their secret shown once; listed and revoked).
import { api, messageOf } from "./api.js";
import { el, headerRow, mainArea, showLoading, showPageError, tableWrap, toast } from "./dom.js";
import { clearErrors, fieldMaker, showFieldError } from "./forms.js";
import { fmtTime, listOf } from "./format.js";
import { projectAdmin } from "./project_admin.js";
import { ALL_PROJECTS, state } from "./state.js";
import { templatesAdmin } from "./templates_admin.js";

const TOKEN_COLUMNS = ["Id", "Subject", "Role", "Projects", "Created", "Expires", "Last used", ""];

/** @param {Record<string, boolean>} flags */
function flagList(flags) {
  return el("ul", { id: "flags" }, Object.entries(flags).map(([name, on]) => {
    const box = el("input", { type: "checkbox", id: `flag-${name}`, checked: on, onchange: async () => {
      try {
        await api("PUT", `/api/v1/flags/${name}`, { value: box.checked });
        toast(`${name} is ${box.checked ? "on" : "off"}.`);
      } catch (e) {
        box.checked = !box.checked;
        toast(messageOf(e));
      }
    } });
    return el("li", {}, el("label", { for: `flag-${name}` }, box, ` ${name}`));
  }));
}

// One token's row; `reload` redraws the table after a revocation.
/** @param {any} t @param {() => Promise<void>} reload */
function tokenRow(t, reload) {
  const revoke = el("button", { type: "button", onclick: async () => {
    if (!confirm(`Revoke token ${t.id} of ${t.subject}?`)) return;
    try { await api("DELETE", `/api/v1/tokens/${t.id}`); await reload(); } catch (e) { toast(messageOf(e)); }
  } }, "Revoke");
  return el("tr", {}, el("td", {}, t.id), el("td", {}, t.subject), el("td", {}, t.role),
    el("td", {}, (t.projects || []).join(", ")), el("td", {}, fmtTime(t.createdAt)),
    el("td", {}, t.expiresAt ? fmtTime(t.expiresAt) : "never"), el("td", {}, t.lastUsed ? fmtTime(t.lastUsed) : "—"),
    el("td", {}, t.revokedAt ? `revoked ${fmtTime(t.revokedAt)}` : revoke));
}

// A new API token: its secret is shown here once (the server keeps only its digest).
/** @param {() => void} onCreated */
function tokenForm(onCreated) {
  /** @type {Record<string, any>} */
  const errors = {};
  const field = fieldMaker("tok-", errors);
  const subject = el("input", { id: "tok-subject", required: true, size: 16 });
  const role = el("select", { id: "tok-role" }, ["user", "admin", "agent", "metrics"].map((r) => el("option", { value: r }, r)));
  const projects = el("input", { id: "tok-projects", size: 24, placeholder: "astro, bio" });
  const ttl = el("input", { id: "tok-ttl", size: 8, placeholder: "30d" });
  const result = el("p", { id: "tok-result", role: "status" });
  const shown = el("output", { id: "new-token", class: "secret" });
  return el("form", { class: "filters", id: "tok-form", "aria-label": "Create an API token",
    onsubmit: async (/** @type {Event} */ ev) => {
      ev.preventDefault();
      clearErrors(errors);
      result.textContent = "";
      shown.textContent = "";
      /** @type {Record<string, any>} */
      const body = { subject: subject.value.trim(), role: role.value, projects: listOf(projects.value) };
      if (ttl.value.trim()) body.ttl = ttl.value.trim();
      try {
        const t = await api("POST", "/api/v1/tokens", body);
        shown.textContent = t.token;
        result.className = "";
        result.textContent = `Token ${t.id} for ${t.subject}: copy it now, it is not shown again.`;
        onCreated();
      } catch (e) {
        showFieldError(e, errors, result);
      }
    } }, field("subject", "Subject", subject), field("role", "Role", role), field("projects", "Projects", projects),
  field("ttl", "Expires after", ttl), el("button", { type: "submit", class: "primary", id: "tok-create" }, "Create token"),
  result, shown);
}

export async function adminPage() {
  showLoading("Admin");
  try {
    const [{ flags }, { tokens }] = await Promise.all([api("GET", "/api/v1/flags"), api("GET", "/api/v1/tokens")]);
    const tokenBody = el("tbody", {});
    // The table is redrawn in place after a change, so a secret just shown above stays there.
    /** @param {any[]} list */
    const showTokens = (list) => tokenBody.replaceChildren(...list.map((t) => tokenRow(t, reloadTokens)));
    const reloadTokens = async () => showTokens((await api("GET", "/api/v1/tokens")).tokens);
    showTokens(tokens);
    const templates = el("section", { id: "templates-admin", "aria-labelledby": "templates-heading" });
    const project = el("section", { id: "project-admin", "aria-labelledby": "project-heading" });
    mainArea().replaceChildren(el("h1", {}, "Admin"), el("h2", {}, "Feature flags"), flagList(flags),
      project, templates, el("h2", {}, "API tokens"), tokenForm(() => reloadTokens().catch((e) => toast(messageOf(e)))),
      tableWrap("API tokens", el("table", { id: "tokens-table" }, headerRow(TOKEN_COLUMNS), tokenBody)));
    // With every project selected, none is the one to configure: the form takes a name.
    const selected = state.project === ALL_PROJECTS ? "" : state.project;
    projectAdmin(project, selected);
    templatesAdmin(templates, selected);
  } catch (e) {
    showPageError("Admin", messageOf(e));
  }
}
