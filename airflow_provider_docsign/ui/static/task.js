// The per-task Contracts tab: the envelopes this task instance created or waits on, or its campaign. Values are written
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
  // A bulk send's campaign (or the campaign a batch archive or wait works through): the task's counts,
  // and a link to the campaign's view on the Contracts page (in this same frame).
  function showCampaign(c, total) {
    const box = $("campaign");
    box.hidden = false;
    const verb = { sent: "sent", handled: "archives", waiting: "waits on" }[c.relation] || "works through";
    const n = c.counts || {};
    const counts = c.relation === "sent"
      ? ": " + (c.rows === null ? "?" : c.rows) + " rows, " + (n.sent || 0) + " sent, " + (n.invalid || 0) + " invalid, " + (n.failed || 0) + " failed"
      : "";
    box.appendChild(el("p", "This task " + verb + " the campaign " + c.campaign_id + counts + ".", "campaign-counts"));
    if (c.data_error) box.appendChild(el("p", "Data error: " + c.data_error, "error"));
    if (c.stopped) box.appendChild(el("p", "Stopped before the end: " + c.stopped, "error"));
    const view = new URL("contracts", window.location.href);
    view.search = "";
    view.searchParams.set("conn_id", c.connection);
    view.searchParams.set("campaign", c.campaign_id);
    const a = el("a", "Open the campaign " + c.campaign_id);
    a.href = view.pathname + view.search;
    a.id = "campaign-link";
    box.appendChild(a);
    if (total === 0) $("summary").textContent = "This task handles no single envelope Airflow can see; its campaign is below.";
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
      if (data.campaign) showCampaign(data.campaign, data.total);
      const box = $("envelopes");
      for (const e of data.envelopes) {
        const div = el("div", null, "envelope");
        div.dataset.envelopeId = e.id;
        const h = el("h2");
        h.appendChild(el("span", e.title));
        h.appendChild(document.createTextNode(" "));
        h.appendChild(el("span", e.status, "status status-" + e.status));
        div.appendChild(h);
        // A rejection is "rejected", with its own time: the service's completedAt is set for it too.
        const settled = e.completed_at ? "; completed " + when(e.completed_at)
          : e.rejected_at ? "; rejected " + when(e.rejected_at)
          : e.cancelled_at ? "; cancelled " + when(e.cancelled_at) : "";
        const meta = el("p", "Envelope " + e.id + (e.external_id ? " (" + e.external_id + ")" : "") + "; created " + when(e.created_at) +
          settled + (e.earliest_expiry ? "; earliest link expiry " + when(e.earliest_expiry) : "") +
          (e.expired ? "; a signing link has expired" : ""));
        div.appendChild(meta);
        for (const r of e.rejections || []) {
          const said = el("p", "Rejected by " + r.role + " " + r.email + (r.at ? " on " + when(r.at) : "") + ": " +
            (r.reason ? r.reason : "(no reason given)"), "rejection");
          div.appendChild(said);
        }
        if (typeof e.url === "string" && /^https?:\/\//i.test(e.url)) {
          const a = el("a", "Open in the signing service"); a.href = e.url; a.target = "_blank"; a.rel = "noopener noreferrer"; div.appendChild(a);
        }
        div.appendChild(el("h3", "Recipients"));
        div.appendChild(table(["Role", "E-mail", "Signing state", "Signed", "Rejected", "Link expires"],
          e.recipients.map((r) => [r.role, r.email, r.signing_status, when(r.signed_at), when(r.rejected_at), when(r.expires_at)])));
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
