// The Contracts page. Every value from the server is written with textContent: nothing is parsed as
// HTML, so a title holding markup shows as text. Links are only ever built from the server's http(s)
// URLs or Airflow paths.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const API = "../api/";
  const state = { conn: null, campaign: null, page: 1 };

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function safeHref(url) {
    if (typeof url !== "string") return null;
    if (url.startsWith("/") && !url.startsWith("//")) return url;
    return /^https?:\/\//i.test(url) ? url : null;
  }
  // Airflow shows this page in an iframe sandboxed without allow-top-navigation and allow-popups: a
  // plain target="_top" or "_blank" link does nothing there. An Airflow path is opened in the UI
  // around the page through its own router (same origin: a history entry and a popstate event); an
  // outside link (the envelope in the signing service) is opened by the window around the page.
  function openInAirflow(href, ev) {
    try {
      const top = window.top;
      if (!top || top === window || top.location.origin !== window.location.origin) return;
      ev.preventDefault();
      top.history.pushState({}, "", href);
      top.dispatchEvent(new PopStateEvent("popstate", { state: {} }));
    } catch (e) { /* not allowed: the link's own behaviour */ }
  }
  function openOutside(href, ev) {
    try {
      const top = window.top;
      if (!top || top === window) return;
      if (top.open(href, "_blank", "noopener,noreferrer") !== undefined) ev.preventDefault();
    } catch (e) { /* not allowed: the link's own behaviour */ }
  }
  function link(text, url, inAirflow) {
    const href = safeHref(url);
    if (!href) return el("span", text);
    const a = el("a", text);
    a.href = href;
    if (inAirflow) {
      a.target = "_top";
      a.addEventListener("click", (ev) => openInAirflow(href, ev));
    } else {
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      a.addEventListener("click", (ev) => openOutside(href, ev));
    }
    return a;
  }
  function when(iso) { return iso ? String(iso).replace("T", " ").slice(0, 16) : ""; }
  function showError(message) {
    const box = $("error");
    box.hidden = !message;
    box.textContent = message || "";
  }
  function detailText(detail) {
    if (Array.isArray(detail)) return detail.map((d) => (d && d.msg ? String(d.msg) : String(d))).join("; ");
    return detail ? String(detail) : "";
  }
  async function get(path, params) {
    const url = new URL(API + path, window.location.href);
    Object.entries(params || {}).forEach(([k, v]) => { if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, v); });
    const resp = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    const body = await resp.json().catch(() => ({}));
    if (!resp.ok) throw new Error(detailText(body.detail) || "HTTP " + resp.status);
    return body;
  }

  function cell(row, content) {
    const td = document.createElement("td");
    if (content instanceof Node) td.appendChild(content); else td.textContent = content === null || content === undefined ? "" : String(content);
    row.appendChild(td);
    return td;
  }

  function renderContracts(data) {
    const body = $("contracts").querySelector("tbody");
    body.replaceChildren();
    for (const r of data.rows) {
      const tr = document.createElement("tr");
      tr.dataset.envelopeId = r.id;
      tr.dataset.status = r.status;
      if (r.stalled) { tr.classList.add("stalled"); tr.title = r.stalled_reason || "stalled"; }
      cell(tr, r.title);
      cell(tr, r.external_id);
      cell(tr, el("span", r.status, "status status-" + r.status));
      cell(tr, r.age_days === null ? "" : r.age_days.toFixed(1));
      cell(tr, when(r.sent_at));
      cell(tr, r.completed_at ? when(r.completed_at) : r.ended_at ? String(r.status).toLowerCase() + " " + when(r.ended_at) : "");
      cell(tr, r.unsigned.map((u) => u.role + " " + u.email).join(", "));
      cell(tr, when(r.earliest_expiry));
      cell(tr, r.folder || (r.folder_id ? r.folder_id : "(root)"));
      const links = document.createElement("div");
      if (r.url) links.appendChild(link("Envelope", r.url, false));
      for (const t of r.tasks) {
        links.appendChild(document.createTextNode(" "));
        const label = ({ waiting: "Waiting: ", sent: "Sent by: ", created: "Created by: " }[t.relation] || "Handled by: ") +
          t.dag_id + "." + t.task_id + (t.map_index >= 0 ? "[" + t.map_index + "]" : "");
        const a = link(label, t.url, true);
        a.dataset.relation = t.relation;
        links.appendChild(a);
      }
      cell(tr, links);
      body.appendChild(tr);
    }
    $("count").textContent = data.rows.length + " of " + data.total + " envelopes" + (data.truncated ? " (" + data.truncated + ")" : "");
    // A user who may read only some DAGs sees only the envelopes linked to them: say so.
    $("scope").hidden = data.all_dags !== false;
    $("scope").textContent = data.all_dags === false
      ? "Only the envelopes linked to the DAGs you may read are listed (and counted); envelopes no DAG made, or made by DAGs you may not read, are shown to users who may read every DAG."
      : "";
    $("meta").textContent = "read " + when(data.fetched_at) + " UTC; refreshed at most every " + data.cache_seconds + " s";
    const status = $("status");
    const chosen = status.value;
    status.replaceChildren(el("option", "all"));
    status.firstChild.value = "";
    for (const s of data.statuses) { const o = el("option", s); o.value = s; status.appendChild(o); }
    status.value = chosen;
    const folder = $("folder");
    const folderChosen = folder.value;
    folder.replaceChildren();
    [["", "all"], ["root", "(root)"], ...data.folders.map((f) => [f.id, f.name])].forEach(([v, t]) => { const o = el("option", t); o.value = v; folder.appendChild(o); });
    folder.value = folderChosen;
    const template = $("template");
    const templateChosen = template.value;
    template.replaceChildren();
    [["", "all"], ["none", "(no template)"], ...(data.templates || []).map((t) => [String(t), "template " + t])].forEach(([v, t]) => { const o = el("option", t); o.value = v; template.appendChild(o); });
    template.value = templateChosen;
    if (!$("stalled-days").value) $("stalled-days").value = data.stalled_days;
    renderSummary(data);
  }

  // The numbers above the table, over the rows the filters keep: each one text with a plain label, the
  // raw value in data-value (what the server said), the distribution as a chart and as a table.
  // Durations are written by duration() (below, shared with the campaign view).
  function renderSummary(data) {
    const s = data.summary;
    if (!s || !$("summary")) return;
    const numbers = $("summary-numbers");
    numbers.replaceChildren();
    function add(key, label, value, text) {
      const item = el("div", null, "number");
      item.dataset.key = key;
      const dd = el("dd", text === undefined ? value : text);
      dd.dataset.value = value === null ? "" : String(value);
      item.append(el("dt", label), dd);
      numbers.appendChild(item);
    }
    const t = s.time_to_sign;
    add("shown", "Envelopes shown", s.shown);
    Object.entries(s.counts).forEach(([status, n]) => add("status-" + status, status.charAt(0) + status.slice(1).toLowerCase(), n));
    add("stalled", "Stalled", s.stalled);
    add("median", "Median time to sign", t.median_seconds, duration(t.median_seconds));
    add("p90", "90% signed within", t.p90_seconds, duration(t.p90_seconds));
    add("timed", "Completed with a known send time", t.count);
    add("without_sent", "Sent, send time unknown", s.without_sent);
    const filters = [
      $("status").value && "status " + $("status").value,
      $("stalled").checked && "stalled only",
      $("folder").value && "folder " + $("folder").selectedOptions[0].textContent,
      $("template").value && $("template").selectedOptions[0].textContent,
    ].filter(Boolean);
    $("summary-scope").textContent = "Of the " + s.shown + " envelopes shown" + (filters.length ? " (" + filters.join(", ") + ")" : "") +
      ": time to sign runs from sending to the last signature, completed envelopes only.";
    const body = $("tts-table").querySelector("tbody");
    body.replaceChildren();
    for (const b of s.histogram) {
      const tr = document.createElement("tr");
      tr.dataset.label = b.label;
      cell(tr, b.label);
      cell(tr, b.count);
      body.appendChild(tr);
    }
    if (window.DocsignCharts) {
      window.DocsignCharts.bars($("tts-chart"), {
        labels: s.histogram.map((b) => b.label), values: s.histogram.map((b) => b.count),
        title: "Time to sign (" + t.count + " envelopes)", yLabel: "envelopes",
      });
    }
    const notes = [];
    if (t.completed_without_sent) notes.push(t.completed_without_sent + " completed envelopes have no known send time (sent by a person, or their campaign's result table is not readable here) and are not timed.");
    if ((s.unread_campaigns || []).length) notes.push("Send times not read for campaign(s) " + s.unread_campaigns.join(", ") + ".");
    $("summary-note").textContent = notes.join(" ");
  }

  // Only the answer to the latest request is shown: an earlier one (another connection, other
  // filters) that arrives late is dropped.
  let latest = 0;
  async function loadContracts() {
    const mine = ++latest;
    try {
      showError(null);
      const sort = $("sort").value;
      const data = await get("contracts", {
        conn_id: state.conn, status: $("status").value, stalled: $("stalled").checked ? "true" : "",
        folder_id: $("folder").value, template_id: $("template").value, stalled_days: $("stalled-days").value, sort: sort,
      });
      if (mine === latest) { renderContracts(data); $("contracts").dataset.sort = sort; }
    } catch (e) { if (mine === latest) showError("Could not read the contracts: " + e.message); }
  }

  function bar(svc, sent) {
    const box = el("div", null, "bar");
    if (!svc || !sent) return box;
    const c = svc.counts;
    [["completed", c.completed], ["pending", c.pending - c.expired_link], ["expired", c.expired_link], ["rejected", c.rejected + c.cancelled]].forEach(([cls, n]) => {
      if (n > 0) { const s = el("span", null, cls); s.style.width = (100 * n / sent) + "%"; s.title = cls + ": " + n; box.appendChild(s); }
    });
    return box;
  }

  async function loadCampaigns() {
    const mine = ++latest;
    try {
      showError(null);
      const data = await get("campaigns", { conn_id: state.conn });
      if (mine !== latest) return;
      const body = $("campaigns").querySelector("tbody");
      body.replaceChildren();
      for (const c of data.campaigns) {
        const tr = document.createElement("tr");
        tr.dataset.campaignId = c.campaign_id;
        const open = el("button", c.campaign_id, "link");
        open.type = "button";
        open.addEventListener("click", () => { state.campaign = c.campaign_id; state.page = 1; loadCampaign(); });
        const first = cell(tr, open);
        if (c.stopped) {
          // A try that stopped before the end: no result table; the reason on hover.
          tr.classList.add("stopped");
          const mark = el("span", "stopped", "stopped-mark");
          mark.title = c.stopped;
          first.appendChild(mark);
        }
        const n = c.counts;
        [c.rows, n.sent || 0, n.invalid || 0, n.failed || 0].forEach((v) => cell(tr, v));
        const s = c.service ? c.service.counts : null;
        const missing = c.service_error ? "not read" : "open to load";
        [s && s.completed, s && s.pending, s && s.rejected, s && s.expired_link].forEach((v) => cell(tr, v === null ? missing : v));
        cell(tr, bar(c.service, n.sent || 0));
        cell(tr, link(c.task.dag_id + "." + c.task.task_id, c.task.url, true));
        // Why the service's counts are missing (a refused or unreadable file, the list's budget spent),
        // and a data error in the task's XCom: as text.
        const notes = [c.data_error && "data error: " + c.data_error, c.service_error, c.service_note].filter(Boolean);
        cell(tr, notes.join("; ")).className = "notes";
        body.appendChild(tr);
      }
      $("campaigns-count").textContent = data.campaigns.length + " campaigns; the list reads the service at most " +
        data.list_requests + " times per refresh, the others load when opened";
    } catch (e) { showError("Could not read the campaigns: " + e.message); }
  }

  // A duration in seconds as people read it: minutes, hours, or days.
  function duration(seconds) {
    if (typeof seconds !== "number" || !isFinite(seconds)) return "none";
    if (seconds < 3600) return (seconds / 60).toFixed(0) + " min";
    if (seconds < 48 * 3600) return (seconds / 3600).toFixed(1) + " h";
    return (seconds / 86400).toFixed(1) + " d";
  }
  function percent(share) { return typeof share === "number" && isFinite(share) ? (100 * share).toFixed(1) + " %" : "none"; }

  // The campaign's funnel, signed share (chart and the same numbers as a table) and time to sign.
  function renderTurnaround(svc) {
    const box = $("campaign-turnaround");
    box.hidden = !(svc && svc.funnel && svc.share && svc.time_to_sign);
    if (box.hidden) return;
    const t = svc.time_to_sign, known = svc.sent_times || {};
    $("campaign-ttl").textContent = "Time to sign over " + t.count + " completed envelopes: median " + duration(t.median_seconds) +
      ", 90th percentile " + duration(t.p90_seconds) + ".";
    const funnel = $("campaign-funnel").querySelector("tbody");
    funnel.replaceChildren();
    Object.entries(svc.funnel.stages).forEach(([stage, n]) => {
      const tr = document.createElement("tr");
      tr.dataset.stage = stage;
      [stage, n, percent(svc.funnel.shares[stage])].forEach((v) => cell(tr, v));
      funnel.appendChild(tr);
    });
    const table = $("campaign-share").querySelector("tbody");
    table.replaceChildren();
    for (const p of svc.share.table) {
      const tr = document.createElement("tr");
      tr.dataset.hours = String(p.hours);
      [p.hours, p.eligible, p.signed, percent(p.share)].forEach((v) => cell(tr, v));
      table.appendChild(tr);
    }
    const points = svc.share.points;
    const chart = $("campaign-share-chart");
    if (window.DocsignCharts) {
      window.DocsignCharts.line(chart, {
        xs: points.map((p) => p.hours), ys: points.map((p) => p.share),
        title: "Signed share by hours since sending", xLabel: "hours since sending", yLabel: "signed share",
      });
    } else {
      chart.textContent = "The chart could not be drawn; the table beside it holds its numbers.";
    }
    $("campaign-turnaround-note").textContent = "Send times from the campaign's result table (" + (known.known || 0) + " envelopes)" +
      (known.unknown ? "; " + known.unknown + " without a believable send time are left out of the share and the time to sign" : "") +
      ". Judged at " + when(svc.judged_at) + " UTC.";
  }

  async function loadCampaign() {
    const mine = ++latest;
    try {
      showError(null);
      const data = await get("campaigns/" + encodeURIComponent(state.campaign), { conn_id: state.conn, page: state.page });
      if (mine !== latest) return;
      $("campaign").hidden = false;
      $("campaign-title").textContent = "Campaign " + data.campaign_id;
      const n = data.counts, s = data.service.counts;
      $("campaign-note").textContent = [data.data_error && "Data error: " + data.data_error, data.service.truncated].filter(Boolean).join("; ");
      $("campaign-summary").textContent = (data.stopped ? "Stopped before the end: " + data.stopped + " " : "") + (
        data.rows + " rows: " + (n.sent || 0) + " sent, " + (n.invalid || 0) + " invalid, " + (n.failed || 0) + " failed. Service: " +
        s.completed + " completed, " + s.pending + " pending, " + s.rejected + " rejected, " + s.expired_link + " with an expired link.");
      renderTurnaround(data.service);
      const body = $("campaign-rows").querySelector("tbody");
      body.replaceChildren();
      for (const r of data.problems.items) {
        const tr = document.createElement("tr");
        [r.row, r.row_key, r.status, r.error, r.attempts].forEach((v) => cell(tr, v));
        body.appendChild(tr);
      }
      const p = data.problems;
      $("page").textContent = "page " + p.page + " of " + p.pages + " (" + p.total + (data.stopped ? " failed rows so far)" : " failed or invalid rows)");
      $("prev").disabled = p.page <= 1;
      $("next").disabled = p.page >= p.pages;
    } catch (e) {
      if (mine !== latest) return;
      // A refused or unreadable file: the reason, as text, in the campaign's own view.
      $("campaign").hidden = false;
      $("campaign-title").textContent = "Campaign " + state.campaign;
      $("campaign-summary").textContent = "";
      $("campaign-note").textContent = "Not read: " + e.message;
      $("campaign-turnaround").hidden = true;
      $("campaign-rows").querySelector("tbody").replaceChildren();
      $("page").textContent = "";
      showError("Could not read the campaign: " + e.message);
    }
  }

  function selectTab(name) {
    const contracts = name === "contracts";
    $("tab-contracts").setAttribute("aria-selected", String(contracts));
    $("tab-campaigns").setAttribute("aria-selected", String(!contracts));
    $("contracts-panel").hidden = !contracts;
    $("campaigns-panel").hidden = contracts;
    return (contracts ? loadContracts : loadCampaigns)();
  }

  async function start() {
    try {
      const data = await get("connections");
      const select = $("conn");
      for (const c of data.connections) { const o = el("option", c); o.value = c; select.appendChild(o); }
      state.conn = data.connections[0];
      $("stalled-days").value = data.stalled_days;
      select.addEventListener("change", () => { state.conn = select.value; selectTab($("tab-contracts").getAttribute("aria-selected") === "true" ? "contracts" : "campaigns"); });
      ["status", "stalled", "folder", "template", "sort", "stalled-days"].forEach((id) => $(id).addEventListener("change", loadContracts));
      $("filters").addEventListener("submit", (e) => { e.preventDefault(); loadContracts(); });
      $("tab-contracts").addEventListener("click", () => selectTab("contracts"));
      $("tab-campaigns").addEventListener("click", () => selectTab("campaigns"));
      $("prev").addEventListener("click", () => { state.page -= 1; loadCampaign(); });
      $("next").addEventListener("click", () => { state.page += 1; loadCampaign(); });
      // ?conn_id=...&campaign=... (the link of a bulk-send task's Contracts tab): that campaign's view.
      const here = new URL(window.location.href).searchParams;
      if (here.get("conn_id") && data.connections.includes(here.get("conn_id"))) { state.conn = here.get("conn_id"); select.value = state.conn; }
      if (here.get("campaign")) {
        await selectTab("campaigns");
        state.campaign = here.get("campaign"); state.page = 1;
        await loadCampaign();
      } else {
        await loadContracts();
      }
    } catch (e) { showError(e.message); }
  }
  start();
})();
