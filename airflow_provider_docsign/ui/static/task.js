// The per-task Contracts tab: the envelopes this task instance created or waits on. Values are written
// with textContent only.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function when(iso) { return iso ? String(iso).replace("T", " ").slice(0, 16) : ""; }
  function table(headers, rows) {
    const t = document.createElement("table");
    const head = document.createElement("tr");
    headers.forEach((h) => head.appendChild(el("th", h)));
    t.appendChild(document.createElement("thead")).appendChild(head);
    const body = t.appendChild(document.createElement("tbody"));
    rows.forEach((r) => { const tr = document.createElement("tr"); r.forEach((v) => tr.appendChild(el("td", v))); body.appendChild(tr); });
    return t;
  }
  function detailText(detail) {
    if (Array.isArray(detail)) return detail.map((d) => (d && d.msg ? String(d.msg) : String(d))).join("; ");
    return detail ? String(detail) : "";
  }
  async function start() {
    const here = new URL(window.location.href);
    const url = new URL("../api/task", window.location.href);
    ["dag_id", "run_id", "task_id"].forEach((k) => { const v = here.searchParams.get(k); if (v !== null) url.searchParams.set(k, v); });
    // Airflow fills {MAP_INDEX} in only for a mapped task instance: anything else means "not mapped".
    const mapIndex = here.searchParams.get("map_index");
    url.searchParams.set("map_index", /^-?[0-9]+$/.test(mapIndex || "") ? mapIndex : "-1");
    try {
      const resp = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      const data = await resp.json().catch(() => ({}));
      if (!resp.ok) throw new Error(detailText(data.detail) || "HTTP " + resp.status);
      $("summary").textContent = data.total === 0
        ? "This task handles no envelope that Airflow can see (no envelope id in its XComs, trigger or rendered fields)."
        : "This task handles " + data.total + " envelope(s)" + (data.total > data.envelopes.length ? "; the first " + data.envelopes.length + " are shown" : "") + ".";
      const box = $("envelopes");
      for (const e of data.envelopes) {
        const div = el("div", null, "envelope");
        div.dataset.envelopeId = e.id;
        const h = el("h2");
        h.appendChild(el("span", e.title));
        h.appendChild(document.createTextNode(" "));
        h.appendChild(el("span", e.status, "status status-" + e.status));
        div.appendChild(h);
        const meta = el("p", "Envelope " + e.id + (e.external_id ? " (" + e.external_id + ")" : "") + "; created " + when(e.created_at) +
          (e.completed_at ? "; completed " + when(e.completed_at) : "") + (e.earliest_expiry ? "; earliest link expiry " + when(e.earliest_expiry) : "") +
          (e.expired ? "; a signing link has expired" : ""));
        div.appendChild(meta);
        if (typeof e.url === "string" && /^https?:\/\//i.test(e.url)) {
          const a = el("a", "Open in the signing service"); a.href = e.url; a.target = "_blank"; a.rel = "noopener noreferrer"; div.appendChild(a);
        }
        div.appendChild(el("h3", "Recipients"));
        div.appendChild(table(["Role", "E-mail", "Signing state", "Signed", "Link expires"],
          e.recipients.map((r) => [r.role, r.email, r.signing_status, when(r.signed_at), when(r.expires_at)])));
        if (e.audit) {
          div.appendChild(el("h3", "Last audit events"));
          div.appendChild(table(["When", "Event", "By"], e.audit.map((a) => [when(a.created_at), a.type, a.email || ""])));
        }
        box.appendChild(div);
      }
    } catch (err) {
      $("error").hidden = false;
      $("error").textContent = "Could not read this task's contracts: " + err.message;
    }
  }
  start();
})();
