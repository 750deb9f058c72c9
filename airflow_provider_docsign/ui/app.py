"""The plugin's FastAPI app: the Contracts and task pages, and the JSON they read (Airflow 3.1+ only).

Mounted by the api-server under ``/docsign``. Every route depends on Airflow's own authentication (the
``_token`` cookie the UI sets, or a bearer token) and asks the configured auth manager:

- every route: an authenticated user (else 401 or 403);
- the data routes: read access to the docsign connection asked for (else 403) and to at least one DAG
  (else 403); links to DAG runs are given only for the DAGs the user may read;
- the task view: read access to that DAG's task instances.

Only ``docsign`` connections are offered or accepted: another connection id is refused with 404, so a
page can never send another connection's secret to its host. Responses carry a Content-Security-Policy
without inline scripts, and the pages write every value with ``textContent``: a title holding HTML
shows as text.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from importlib import resources
from typing import Annotated, Any

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import (
    DagAccessEntity,
    DagDetails,
)
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from airflow_provider_docsign.exceptions import DocsignError
from airflow_provider_docsign.service.expiry import mask_text
from airflow_provider_docsign.ui import access, batches, lookup, reader
from airflow_provider_docsign.ui.cache import TtlCache
from airflow_provider_docsign.ui.campaigns import (
    campaign_connection,
    campaign_page,
    campaign_rows,
    campaign_summaries,
)
from airflow_provider_docsign.ui.locations import Refused
from airflow_provider_docsign.ui.sent import SendTimes
from airflow_provider_docsign.ui.settings import UiSettings
from airflow_provider_docsign.ui.task_view import task_data

URL_PREFIX = "/docsign"
PAGES = {"contracts": "contracts.html", "task": "task.html"}
ASSETS = {
    "contracts.js": "text/javascript",
    "task.js": "text/javascript",
    "docsign.css": "text/css",
    "charts.js": "text/javascript",
    # uPlot, pinned and checked in vendor/uplot.json (scripts/vendor_charts.py fetched it): no CDN.
    "vendor/uPlot.iife.min.js": "text/javascript",
    "vendor/uPlot.min.css": "text/css",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class State:
    """The app's settings and caches (one per api-server worker process)."""

    def __init__(self, settings: UiSettings) -> None:
        self.settings = settings
        ttl = settings.cache_seconds
        self.listings: TtlCache[reader.Listing] = TtlCache(ttl)
        self.links: TtlCache[dict[str, list[lookup.TaskRef]]] = TtlCache(ttl)
        self.campaigns: TtlCache[list[lookup.CampaignRun]] = TtlCache(ttl)
        self.states: TtlCache[Any] = TtlCache(ttl)
        self.tables: TtlCache[Any] = TtlCache(ttl)
        self.tasks: TtlCache[Any] = TtlCache(ttl)
        self.batches: TtlCache[list[batches.BatchTask]] = TtlCache(ttl)


def _as_server() -> None:
    """Say that this process is an Airflow server, once, when it first serves a page.

    Airflow's Task SDK looks connections up in the metadata database only in a "server" process
    (``_AIRFLOW_PROCESS_CONTEXT=server``), which its own docstring says the api-server is; Airflow 3.3.2's
    api-server does not set it, so an object store's connection (a campaign's ``s3://conn@...`` result
    table) was not found there. Set only while serving requests (never at import, which every Airflow
    component does) and only when unset.
    """
    os.environ.setdefault("_AIRFLOW_PROCESS_CONTEXT", "server")


def _hook(conn_id: str) -> Any:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    return DocsignHook(docsign_conn_id=conn_id)


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=SECURITY_HEADERS)


def _asset(name: str) -> str:
    found = resources.files("airflow_provider_docsign.ui").joinpath("static")
    for part in name.split("/"):  # only names listed in PAGES or ASSETS reach here
        found = found.joinpath(part)
    return found.read_text(encoding="utf-8")


def _airflow_base(request: Request) -> str:
    """The path the Airflow UI is served under (``""`` at the root), for links to task instances."""
    root = str(request.scope.get("root_path") or "")
    return root[: -len(URL_PREFIX)] if root.endswith(URL_PREFIX) else ""


def _unique(refs: list[lookup.TaskRef]) -> list[lookup.TaskRef]:
    """Each task once per relation (a batch wait is found by its trigger and by its result table)."""
    return list(dict.fromkeys(refs))


def create_app(settings: UiSettings | None = None) -> FastAPI:
    """Build the app (the plugin mounts it under ``/docsign``).

    :param settings: The ``[docsign]`` settings (default: read from Airflow's configuration).
    """
    state = State(settings or UiSettings.from_airflow())
    app = FastAPI(
        title="Docsign contracts",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        dependencies=[Depends(_as_server)],
    )
    app.state.docsign = state

    def readable_dags(user: Any) -> set[str]:
        return access.readable_dags(user)

    def offered(user: Any) -> list[str]:
        return access.offered(state.settings.conn_ids, user)

    def connection(user: Any, conn_id: str | None) -> str:
        return access.connection(state.settings.conn_ids, user, conn_id)

    def campaign_links(dags: set[str], conn_id: str) -> batches.CampaignLinks:
        """External id -> the bulk send of its campaign and the batch tasks on its result table."""
        runs, _ = state.campaigns.get(
            frozenset(dags), lambda: lookup.campaigns(dags, state.settings.lookback_days)
        )
        return batches.CampaignLinks(runs, batch(dags), conn_id)

    def batch(dags: set[str]) -> list[batches.BatchTask]:
        found, _ = state.batches.get(
            frozenset(dags), lambda: batches.batch_tasks(dags, state.settings.lookback_days)
        )
        return found

    def links(dags: set[str]) -> dict[str, list[lookup.TaskRef]]:
        key = frozenset(dags)
        found, _ = state.links.get(key, lambda: lookup.envelope_tasks(dags, state.settings.lookback_days))
        return found

    @app.get("/ui/{page}")
    def page(page: str, user: GetUserDep) -> Response:
        if page not in PAGES:
            raise HTTPException(404, "no such page")
        return Response(_asset(PAGES[page]), media_type="text/html", headers=SECURITY_HEADERS)

    @app.get("/ui/static/{name:path}")
    def asset(name: str, user: GetUserDep) -> Response:
        if name not in ASSETS:
            raise HTTPException(404, "no such file")
        return Response(_asset(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)

    @app.get("/api/connections")
    def connections(user: GetUserDep) -> JSONResponse:
        readable_dags(user)
        ids = offered(user)
        if not ids:
            raise HTTPException(403, access.NO_CONNECTION)
        return _json({"connections": ids, "stalled_days": state.settings.stalled_days})

    @app.get("/api/contracts")
    def contracts(
        request: Request,
        user: GetUserDep,
        conn_id: str | None = None,
        status: str | None = None,
        stalled: bool = False,
        folder_id: str | None = None,
        stalled_days: Annotated[float | None, Query(ge=0, le=3650)] = None,
        sort: Annotated[str, Query(pattern="^-?age$")] = "-age",
        template_id: Annotated[str | None, Query(pattern="^(none|[0-9]{1,16})$")] = None,
    ) -> JSONResponse:
        dags = readable_dags(user)
        chosen = connection(user, conn_id)
        listing, age = state.listings.get(chosen, lambda: _listing(chosen))
        threshold = state.settings.stalled_days if stalled_days is None else stalled_days
        now = datetime.now(timezone.utc)
        refs = links(dags)
        base = _airflow_base(request)
        sent_by = campaign_links(dags, chosen)
        by_batch = batches.batch_envelopes(batch(dags))
        runs, _ = state.campaigns.get(
            frozenset(dags), lambda: lookup.campaigns(dags, state.settings.lookback_days)
        )
        send_time = SendTimes(state, runs, chosen, now)  # file reads (cached), never a service request
        # A user who may read only some DAGs sees only the envelopes linked to them; envelopes no DAG
        # (or only DAGs they may not read) made are for those who may read every DAG.
        every = lookup.every_dag(dags)
        shown = []  # (row, envelope, send time): the summary is computed over what the filters keep
        for envelope in listing.envelopes:
            own = refs.get(envelope.id, [])
            campaign = sent_by(envelope.external_id)
            tasks = _unique([*own, *by_batch.get(envelope.id, ()), *campaign])
            if not every and not tasks:
                continue
            open_ = reader.is_open(envelope)
            tasks = [t for t in tasks if t.relation != "waiting" or open_]  # a settled one waits no more
            sent = send_time(envelope.id, own, campaign)
            row = reader.contract_row(
                envelope,
                folders=listing.folders,
                web_url=listing.web_url,
                now=now,
                stalled_days=threshold,
                tasks=[r.to_dict(base) for r in tasks],
                sent=sent,
            )
            shown.append((row, envelope, sent))
        total = len(shown)
        rows = [r for r, _, _ in shown]
        shown_folders = {r["folder_id"] for r in rows} if not every else set(listing.folders)
        statuses = sorted({r["status"] for r in rows})
        templates = sorted({r["template_id"] for r in rows if r["template_id"] is not None})
        if status:
            shown = [s for s in shown if s[0]["status"] == status.upper()]
        if stalled:
            shown = [s for s in shown if s[0]["stalled"]]
        if folder_id:
            shown = [s for s in shown if (s[0]["folder_id"] or "root") == folder_id]
        if template_id:
            shown = [s for s in shown if str(s[0]["template_id"] or "none") == template_id]
        summary = reader.contracts_summary(shown)
        summary["unread_campaigns"] = sorted(send_time.unread)[:20]
        rows = [r for r, _, _ in shown]
        # By the exact creation time (oldest first is "-age"); no time: last either way.
        dated = [r for r in rows if reader.parse_time(r["created_at"]) is not None]
        dated.sort(key=lambda r: reader.parse_time(r["created_at"]), reverse=sort != "-age")  # type: ignore[arg-type,return-value]
        rows = dated + [r for r in rows if reader.parse_time(r["created_at"]) is None]
        return _json(
            {
                "connection": chosen,
                "rows": rows,
                "summary": summary,
                "templates": templates,
                "total": total,
                "all_dags": every,
                "statuses": statuses,
                "folders": [
                    {"id": k, "name": v}
                    for k, v in sorted(listing.folders.items(), key=lambda kv: kv[1])
                    if k in shown_folders
                ],
                "stalled_days": threshold,
                "fetched_at": listing.fetched_at,
                "cache_age_seconds": round(age, 1),
                "cache_seconds": state.settings.cache_seconds,
                "truncated": listing.truncated,
            }
        )

    def _listing(conn_id: str) -> reader.Listing:
        hook = _hook(conn_id)
        try:
            return reader.read_listing(hook)
        finally:
            hook.close()

    @app.get("/api/campaigns")
    def campaigns(request: Request, user: GetUserDep, conn_id: str | None = None) -> JSONResponse:
        dags = readable_dags(user)
        chosen = connection(user, conn_id)
        runs, _ = state.campaigns.get(
            frozenset(dags), lambda: lookup.campaigns(dags, state.settings.lookback_days)
        )
        return _json(campaign_summaries(state, chosen, runs, _airflow_base(request), _hook))

    @app.get("/api/campaigns/{campaign_id:path}")
    def campaign(
        request: Request,
        campaign_id: str,
        user: GetUserDep,
        conn_id: str | None = None,
        page: Annotated[int, Query(ge=1, le=100_000)] = 1,
        page_size: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> JSONResponse:
        dags = readable_dags(user)
        if conn_id is not None:
            connection(user, conn_id)  # an id that is not an offered docsign connection: 404 first
        runs, _ = state.campaigns.get(
            frozenset(dags), lambda: lookup.campaigns(dags, state.settings.lookback_days)
        )
        run = next((r for r in runs if r.result.get("campaign_id") == campaign_id), None)
        if run is None:
            raise HTTPException(404, "no such campaign in the DAGs you may read")
        own = campaign_connection(run)
        if conn_id is not None and conn_id != own:
            raise HTTPException(404, "no such campaign through this connection")
        chosen = connection(user, own)  # the campaign's own connection, whatever was asked
        try:
            data = campaign_page(state, chosen, run, _airflow_base(request), _hook)
            data["problems"] = campaign_rows(state, run, page, page_size)
        except Refused as error:
            raise HTTPException(422, mask_text(str(error)[:1000])) from None
        return _json(data)

    @app.get("/api/task")
    def task(
        request: Request,
        user: GetUserDep,
        dag_id: str,
        run_id: str,
        task_id: str,
        map_index: int = -1,
    ) -> JSONResponse:
        allowed = get_auth_manager().is_authorized_dag(
            method="GET",
            access_entity=DagAccessEntity.TASK_INSTANCE,
            details=DagDetails(id=dag_id),
            user=user,
        )
        if not allowed:
            raise HTTPException(
                403, "you may not read this DAG's task instances: ask for read access to them"
            )
        key = (dag_id, run_id, task_id, map_index)
        return _json(task_data(state, user, _airflow_base(request), key, _hook))

    @app.exception_handler(DocsignError)
    def service_error(request: Request, error: DocsignError) -> JSONResponse:
        # Our errors never hold the API key; an e-mail in the service's message is masked.
        return _json({"detail": f"the signing service could not be read: {mask_text(str(error))}"}, 502)

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        return _json({"detail": error.detail}, error.status_code)

    @app.exception_handler(RequestValidationError)
    def bad_parameter(request: Request, error: RequestValidationError) -> JSONResponse:
        said = [
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'query')}: {e.get('msg', 'invalid')}"
            for e in error.errors()[:5]
        ]
        return _json({"detail": "; ".join(said)[:1000]}, 422)

    @app.exception_handler(Exception)
    def unexpected(request: Request, error: Exception) -> JSONResponse:
        # Still one JSON line with the headers; the type only (a message could hold anything).
        return _json({"detail": f"the Contracts page failed: {type(error).__name__}"}, 500)

    return app
