// The data planes (admins): each one's state, last report, the Slurm it offers, its components.
import { api, messageOf } from "./api.js";
import { el, headerRow, mainArea, showLoading, showPageError, tableWrap } from "./dom.js";

const COLUMNS = ["Name", "State", "Last report", "Slurm", "Components", "Reasons"];

export async function dataPlanesPage() {
  showLoading("Data planes");
  try {
    const { dataPlanes } = await api("GET", "/api/v1/dataplanes");
    const now = Date.now() / 1000;
    const rows = dataPlanes.map((/** @type {any} */ d) => el("tr", {}, el("td", {}, d.name), el("td", {}, d.state),
      el("td", {}, `${Math.max(0, Math.round(now - d.lastReport))} s ago`),
      el("td", {}, d.slurm.offered ? `Slurm ${d.slurm.version}` : "no Slurm offered"),
      el("td", {}, Object.entries(d.componentVersions).map(([k, v]) => `${k} ${v}`).join(", ")),
      el("td", {}, (d.reasons || []).join("; "))));
    mainArea().replaceChildren(el("h1", {}, "Data planes"),
      tableWrap("Data planes", el("table", { id: "dataplanes-table" }, headerRow(COLUMNS),
        el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: COLUMNS.length, class: "muted" }, "No data plane has reported."))))));
  } catch (e) {
    showPageError("Data planes", messageOf(e));
  }
}
