// The selected project's configuration (PUT /projects/{p}): where its workspaces run and what
// they may be. An admin configures a new project by typing its name.
import { api } from "./api.js";
import { el, toast } from "./dom.js";
import { clearErrors, fieldMaker, showFieldError } from "./forms.js";
import { listOf, listText } from "./format.js";

// The configuration's fields, from `config` (defaults for a new project).
/** @param {any} config */
function projectInputs(config) {
  /** @param {string} id @param {any} value @param {Record<string, any>} [attrs] */
  const input = (id, value, attrs = {}) => el("input", { id: `prj-${id}`, value: value ?? "", size: 14, ...attrs });
  return {
    tiers: input("tiers", config ? listText(config.tiers) : "small"),
    defaultTier: input("defaultTier", config ? config.defaultTier : "small"),
    maxWorkers: input("maxWorkers", config ? config.maxWorkers : 2, { type: "number", min: 1 }),
    idle: input("idleTimeout", config ? `${config.idleTimeoutSeconds}s` : "5m"),
    lifetime: input("tokenLifetime", config ? `${config.tokenLifetimeSeconds}s` : "8h"),
    datasets: input("datasets", config ? listText(config.datasets) : "", { size: 20 }),
    admins: input("sysAdmins", config ? listText(config.sysAdmins) : "", { size: 20 }),
  };
}

/** @param {any} into @param {string} selected */
export async function projectAdmin(into, selected) {
  let planes = [];
  try { ({ dataPlanes: planes } = await api("GET", "/api/v1/dataplanes")); } catch { /* listed by name only */ }
  let config = null;
  if (selected) {
    try { config = await api("GET", `/api/v1/projects/${selected}`); } catch { config = null; }
  }
  /** @type {Record<string, any>} */
  const errors = {};
  const field = fieldMaker("prj-", errors);
  const name = el("input", { id: "prj-name", value: selected ?? "", size: 14, required: true, pattern: "[a-z][a-z0-9\\-]{0,62}" });
  const plane = el("select", { id: "prj-dataPlane" }, planes.map((/** @type {any} */ d) =>
    el("option", { value: d.name, selected: config && config.dataPlane === d.name }, `${d.name} (${d.state})`)));
  const f = projectInputs(config);
  const result = el("p", { id: "prj-result", role: "status" });
  const form = el("form", { class: "filters", id: "prj-form", "aria-label": "Project configuration",
    onsubmit: async (/** @type {Event} */ ev) => {
      ev.preventDefault();
      clearErrors(errors);
      result.textContent = "";
      /** @type {Record<string, any>} */
      const body = { dataPlane: plane.value, tiers: listOf(f.tiers.value), defaultTier: f.defaultTier.value.trim(),
        maxWorkers: Number(f.maxWorkers.value), idleTimeout: f.idle.value.trim(), tokenLifetime: f.lifetime.value.trim(),
        sysAdmins: listOf(f.admins.value) };
      if (listOf(f.datasets.value).length) body.datasets = listOf(f.datasets.value);
      try {
        const p = await api("PUT", `/api/v1/projects/${encodeURIComponent(name.value.trim())}`, body);
        toast(`Project ${p.name} saved.`);
      } catch (e) {
        showFieldError(e, errors, result);
      }
    } }, field("name", "Project", name), field("dataPlane", "Data plane", plane), field("tiers", "Tiers", f.tiers),
  field("defaultTier", "Default tier", f.defaultTier), field("maxWorkers", "Max workers", f.maxWorkers),
  field("idleTimeout", "Idle timeout", f.idle), field("tokenLifetime", "Token lifetime", f.lifetime),
  field("datasets", "Datasets", f.datasets), field("sysAdmins", "Slurm admins", f.admins),
  el("button", { type: "submit", class: "primary", id: "prj-save" }, "Save project"), result);
  into.replaceChildren(el("h2", { id: "project-heading" }, "Project configuration"),
    planes.length ? form : el("p", { class: "muted" }, "No data plane has reported yet: a project needs one to run on."));
}
