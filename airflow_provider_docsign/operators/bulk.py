"""DocsignBulkSendOperator: one task sends a whole campaign, exactly once per row, at the service's limit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign import metrics
from airflow_provider_docsign._compat import Asset, conf
from airflow_provider_docsign.archive.store import is_local
from airflow_provider_docsign.bulk.lease import BEAT_SECONDS, CampaignLease, LeaseRefusedError
from airflow_provider_docsign.bulk.plan import (
    INPUT_FORMATS,
    OUTPUT_FORMATS,
    RESULT_COLUMNS,
    BulkConfigError,
    CampaignPlan,
    SourceRows,
    default_max_failures,
    format_of,
    iter_keys,
    read_campaign_rows,
    result_table_format,
)
from airflow_provider_docsign.bulk.state import (
    INVALID,
    STOPPED_XCOM_KEY,
    CampaignState,
    RowState,
    row_digest,
    summary_table,
)
from airflow_provider_docsign.bulk.store import (
    CheckpointFile,
    lease_beat,
    lease_folder,
    resolve_path,
    service_identity,
    static_uri,
)
from airflow_provider_docsign.exceptions import DocsignAuthError
from airflow_provider_docsign.export.store import TableFile, require_pyarrow, uri_of
from airflow_provider_docsign.operators._base import DocsignBaseOperator, fail_now
from airflow_provider_docsign.operators._bulk import SETTLE_MARGIN, BulkStopped, CampaignRunner
from airflow_provider_docsign.operators._bulk_steps import (
    describe_try,
    install_pacer,
    read_templates,
    reconcile_with_service,
    restore_checkpoint,
    validate_rows,
)
from airflow_provider_docsign.service.expiry import DEFAULT as DEFAULT_PERIOD
from airflow_provider_docsign.service.expiry import period_meta_fields

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.hooks._pacing import SharedPacer

__all__ = ["DocsignBulkSendOperator"]

#: The result table's schema version (Parquet metadata ``docsign_schema_version``).
RESULT_SCHEMA_VERSION = 1
#: The hook's connection pool holds 16 connections; more threads would only wait for one.
MAX_IN_FLIGHT = 16


class DocsignBulkSendOperator(DocsignBaseOperator):
    """Send a whole campaign (one envelope per row) in one task: exactly once per row, at the limit.

    **Rows** come from a CSV, JSON Lines or Parquet file (``parquet`` extra) at any path or
    ``ObjectStoragePath``, or from a list of dicts (for example another task's XCom). Each row has a
    key (``key_column``) and becomes one envelope: from a **template** (``POST /envelope/use``, one
    request that creates and sends) when the row has a ``template_id`` column or the operator a
    ``template_id``; otherwise from **PDFs** (create, then distribute: two requests). A row may carry
    ``recipients``, ``prefill_fields``, ``files``, ``title`` and ``meta`` columns (JSON text in a
    CSV); where it does not, the operator's argument of the same name is used, with ``{column}`` in
    its strings replaced by the row's value (see :mod:`airflow_provider_docsign.bulk.plan`).

    **Validation first.** Every row is checked locally with the validators of
    :class:`DocsignCreateEnvelopeFromTemplateOperator` and :class:`DocsignCreateEnvelopeOperator`
    (each template is read once for it) before the first envelope is sent. Invalid rows go to the
    result table with their problems and are never sent; with more than ``max_invalid`` of them the
    task fails before any envelope is created, naming the first few rows and their problems.

    **Exactly once.** Each row's ``externalId`` is ``<campaign_id>(<row key>)`` (keys NFC-normalised; a
    campaign id may not hold ``( ) [ ] * ?``, a key not ``[ ] * ?``, so the mapping is injective). A try
    first takes the campaign's **lease**: one per campaign and service, in ``[docsign]
    campaign_lease_dir`` (default ``$AIRFLOW_HOME/docsign/campaign-leases``; a shared path or an
    object store for workers on several machines), whatever result table the try names. While another
    try's heartbeat is fresh it waits, at most one stale period (two beats, 20 s, plus the connection's
    read timeout plus 2 s), then fails naming that try; a stale heartbeat (or one more than a stale
    period in the future) is taken over, and that is logged. Then the **service says what
    exists**: the campaign's envelopes are listed once (``query=<campaign_id>(``, 100 a page: one
    request per 100 envelopes already made, one for a new campaign), matched to rows by exact
    ``externalId`` and adopted; the checkpoint (``<result_table>.checkpoint.json``) is believed only
    where the service agrees. Each row is marked in flight there before its create request goes out; a
    create whose answer was lost is looked up by its ``externalId`` (exact match, in ``folder_id``),
    never repeated blindly. After three such rounds that find nothing (a service answering 5xx to every
    create), the task stops; the next try resumes.

    **Amending a campaign.** Run the same ``campaign_id`` again with rows fixed or added: rows already
    made are found and skipped, fixed invalid rows are validated and sent, new keys are sent. A row
    whose content changed after its envelope was made is not sent again: the log and the result
    table's ``error`` column note it, and the XCom counts it (``amended``).

    **Row files.** A path that comes from a row (a ``files`` cell, or a ``{column}`` inside ``files``)
    must lie under ``files_root`` (symbolic links resolved); a row cannot choose a URL scheme, a bucket
    or a connection. Without ``files_root`` such rows are invalid. A fixed ``files`` list needs none.

    **Speed.** ``max_in_flight`` threads share the hook's connection pool and one pacer, which reads
    ``X-RateLimit-*`` and ``Retry-After``: full speed while the window is comfortable, spread out as
    it runs low, never into the ``reserve_fraction`` kept for the key's other users; a 429 pauses every
    thread. A progress line (done/total, envelopes a minute against the limit, ETA) is logged every
    ``progress_every`` rows or ``progress_seconds``, and a summary table at the end.

    **Failures.** A row the service refuses (a 4xx other than 429) is ``failed`` and the campaign goes
    on; past ``max_failures`` failed rows in one try the task stops and fails, and the next try
    resumes (trying the failed rows again, after looking each up). Connection errors, 429s and 5xx
    are retried per row (a create only after looking it up); a refused API key fails at once.

    **Output.** The result table (JSON Lines or Parquet, written like the export's files: staged,
    then published whole) has one row per input row, in input order: ``row_key``, ``external_id``,
    ``envelope_id``, ``status`` (``sent``, ``created``, ``invalid``, ``failed``), ``error``,
    ``attempts``, ``sent_at``. The XCom holds counts and URIs only::

        {"campaign_id", "rows", "counts": {"sent", "created", "invalid", "failed"}, "adopted",
         "amended", "result_table", "format", "checkpoint", "requests", "answered_429",
         "envelopes_per_minute", "limit_bound_per_minute"}

    ``envelopes_per_minute`` counts envelopes this try sent, not rows it adopted;
    ``limit_bound_per_minute`` is ``None`` when the try ran less than one rate window.

    and an Asset event is emitted for the result table, so a waiting DAG can start from it.

    :param rows: A file (local path, URI or ``ObjectStoragePath``) or a list of dicts. Templated.
    :param result_table: The result table's file: local path, URI or ``ObjectStoragePath``; the
        checkpoint is kept beside it. Templated.
    :param campaign_id: The campaign's id, the first part of every ``externalId``. Templated; default
        ``"<dag id>.<task id>"``: the same for every run, so a DAG triggered twice (at once, or again
        later) sends each row once. Give another word (``"renewals-2028"``) to send a new campaign over
        the same rows; ``"{{ dag.dag_id }}-{{ run_id }}"`` makes every run a campaign of its own.
    :param key_column: The column holding each row's key (unique, a string or an integer).
    :param input_format: ``csv``, ``jsonl`` or ``parquet`` (default: from the file's extension).
    :param output_format: ``jsonl`` or ``parquet`` (default: from the extension). A result table
        named like another format (``results.csv``), or with no known extension and no
        ``output_format``, is refused before any request; the sensor and the batch archive take the same
        format as ``result_table_format``.
    :param template_id: The template of rows without a ``template_id`` column. Templated.
    :param title: The title of rows without a ``title`` column, e.g. ``"Renewal for {name}"``;
        required for PDF rows, an override for template rows.
    :param recipients: The recipients of rows without a ``recipients`` column: for a template
        ``[{"placeholder": "Customer", "email": "{email}", "name": "{name}"}]``, for PDFs the create
        operator's shape (``email``, ``name``, ``role``, ``fields``).
    :param prefill_fields: Template rows: ``{field label: "{column}"}`` or ``[{"label", "value"}]``.
    :param files: PDF rows: the PDFs, e.g. ``["s3://bucket/contracts/{row_key}.pdf"]``; template
        rows: replacement PDFs.
    :param meta: PDF rows: the envelope ``meta`` (``subject``, ``message``, ...); template rows: the
        ``override`` (``subject``, ``message``, ...).
    :param folder_id: The folder every envelope is made in (``None``: the root). Templated.
    :param distribute: Send each envelope (default). ``False`` leaves drafts (status ``created``).
    :param expiration_period: How long signing links stay valid, as for the single-envelope operators.
    :param reminders: Automatic reminders, as for the single-envelope operators (template rows then
        cost three requests each: use, update, distribute).
    :param max_in_flight: Requests at most in flight at once (1-16, default 8).
    :param reserve_fraction: Share of the rate-limit window left for the key's other users (0.1).
    :param max_invalid: Invalid rows tolerated (default 0: any invalid row fails the task first).
    :param max_failures: Failed rows tolerated in one try (default: 1 % of the rows, at least 10).
    :param progress_every: A progress line every this many rows done (default 500)...
    :param progress_seconds: ...or every this many seconds (default 30).
    :param asset: The Asset (Dataset on Airflow 2.11) to emit an event for, with the counts and the
        table's URI in its extra. Default: an Asset named after ``result_table`` when it is not
        templated.
    :param files_root: Where the files a row names may be: a local folder, or an object-store prefix
        (``s3://bucket/contracts``), read with ``files_conn_id``. Templated.
    :param files_conn_id: The Airflow connection that reads an object-store ``files_root``.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = (
        "rows",
        "result_table",
        "campaign_id",
        "template_id",
        "folder_id",
        "files_root",
    )
    template_fields_renderers = {"rows": "json"}
    operator_extra_links = ()
    ui_color = "#d6eaff"

    def __init__(
        self,
        *,
        rows: Any,
        result_table: Any,
        campaign_id: str | None = None,
        key_column: str = "row_key",
        input_format: str | None = None,
        output_format: str | None = None,
        template_id: str | None = None,
        title: str | None = None,
        recipients: list[dict[str, Any]] | None = None,
        prefill_fields: Any = None,
        files: Any = None,
        meta: dict[str, Any] | None = None,
        folder_id: str | None = None,
        distribute: bool = True,
        expiration_period: Any = DEFAULT_PERIOD,
        reminders: Any = DEFAULT_PERIOD,
        max_in_flight: int = 8,
        reserve_fraction: float = 0.1,
        max_invalid: int = 0,
        max_failures: int | None = None,
        progress_every: int = 500,
        progress_seconds: float = 30.0,
        asset: Any = None,
        files_root: Any = None,
        files_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if input_format is not None and input_format not in INPUT_FORMATS:
            raise ValueError(f"input_format must be one of {', '.join(INPUT_FORMATS)}, not {input_format!r}")
        if output_format is not None and output_format not in OUTPUT_FORMATS:
            raise ValueError(
                f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, not {output_format!r}"
            )
        if output_format == "parquet" or (output_format is None and str(result_table).endswith(".parquet")):
            require_pyarrow()  # refused at parse time, naming the extra
        if static_uri(result_table) is not None:
            result_table_format(resolve_path(result_table), output_format)  # results.csv: refused now
        if not isinstance(max_in_flight, int) or not 1 <= max_in_flight <= MAX_IN_FLIGHT:
            raise ValueError(
                f"max_in_flight must be 1-{MAX_IN_FLIGHT} (the hook's connection pool), not {max_in_flight!r}"
            )
        if not 0 <= reserve_fraction < 1:
            raise ValueError(f"reserve_fraction must be in [0, 1), not {reserve_fraction!r}")
        if not isinstance(max_invalid, int) or max_invalid < 0:
            raise ValueError(f"max_invalid must be an integer >= 0, not {max_invalid!r}")
        if max_failures is not None and (not isinstance(max_failures, int) or max_failures < 0):
            raise ValueError(f"max_failures must be an integer >= 0, not {max_failures!r}")
        period_meta_fields(expiration_period, reminders)  # "14 days" fails at parse time
        if asset is None:
            uri = static_uri(result_table)  # parse time: nothing looked up, no connection id
            asset = Asset(uri) if uri else None
        if asset is not None:
            outlets = list(kwargs.pop("outlets", None) or [])
            kwargs["outlets"] = [*outlets, asset] if asset not in outlets else outlets
        super().__init__(**kwargs)
        self.rows = rows
        self.result_table = result_table
        self.campaign_id = campaign_id
        self.key_column = key_column
        self.input_format = input_format
        self.output_format = output_format
        self.template_id = template_id
        self.title = title
        self.recipients = recipients
        self.prefill_fields = prefill_fields
        self.files = files
        self.meta = meta
        self.folder_id = folder_id
        self.distribute = distribute
        self.expiration_period = expiration_period
        self.reminders = reminders
        self.max_in_flight = max_in_flight
        self.reserve_fraction = reserve_fraction
        self.max_invalid = max_invalid
        self.max_failures = max_failures
        self.progress_every = progress_every
        self.progress_seconds = progress_seconds
        self.asset = asset
        self.files_root = files_root
        self.files_conn_id = files_conn_id

    # -- execute ----------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        """Take the campaign's lease, list it at the service, validate, send the rest, write the table."""
        try:
            plan = self._plan()
            output = resolve_path(self.result_table)
            fmt = result_table_format(output, self.output_format)
            read = self._read_rows()
        except (BulkConfigError, ValueError, TypeError, FileNotFoundError) as err:
            raise fail_now(err) from err
        settle = float(self.hook.settings.timeout[1])
        try:
            folder, beat = lease_folder(conf), lease_beat(conf, BEAT_SECONDS)
        except ValueError as err:
            raise fail_now(err) from err
        lease = CampaignLease(
            folder,
            plan.campaign_id,
            describe=describe_try(context),
            # Alive, the owner beats every ``beat`` seconds, and its last request lands within the read
            # timeout: two beats missed, plus the margin and the read timeout, and it is surely dead.
            stale_after=2 * beat + SETTLE_MARGIN + settle,
            log=self.log,
            service=service_identity(self.hook.settings.base_url),
            beat=beat,
        )
        if is_local(output):
            output.parent.mkdir(parents=True, exist_ok=True)
        try:
            lease.acquire()  # LeaseHeldError: another try sent this campaign all along; nothing was sent
        except LeaseRefusedError as err:  # a link at the lease's path: no retry can help
            raise fail_now(err) from err
        try:
            return self._run(context, plan, output, fmt, read, lease, settle)
        finally:
            lease.release()

    def _run(
        self,
        context: Context,
        plan: CampaignPlan,
        output: Any,
        fmt: str,
        read: SourceRows,
        lease: CampaignLease,
        settle: float,
    ) -> dict[str, Any]:
        rows = read.rows
        keys = list(iter_keys(plan, rows, read.where))
        state = CampaignState(
            plan.campaign_id,
            [RowState(key) for key, _ in keys],
            distribute=self.distribute,
            digests=[row_digest(row) for row in rows],
        )
        # A row whose key is unusable or repeats an earlier row's is invalid on every try, before the
        # checkpoint or the service are read: they never touch it (the first holder keeps its record).
        for rs, (_key, problems) in zip(state.rows, keys, strict=True):
            if problems:
                rs.state, rs.error = INVALID, "; ".join(problems)
        checkpoint = CheckpointFile(output)
        restore_checkpoint(self.log, checkpoint, state, plan)
        pacer = self._pace()
        try:
            reconcile_with_service(self.hook, self.log, plan, state)
        except DocsignAuthError as err:  # a refused key: no retry can help
            raise fail_now(err) from err
        templates = read_templates(self.hook, plan, rows, state)
        try:
            validate_rows(self.log, self.max_invalid, plan, read, keys, state, templates)
        finally:  # found invalid by this try's validation (a later try finds them again)
            invalid = state.counts().get("invalid", 0)
            metrics.campaign_rows("invalid", self.docsign_conn_id, plan.campaign_id, invalid)
        max_failures = self.max_failures if self.max_failures is not None else default_max_failures(len(rows))
        runner = CampaignRunner(
            hook=self.hook,
            plan=plan,
            rows=rows,
            state=state,
            templates=templates,
            save=checkpoint.write,
            pacer=pacer,
            max_in_flight=self.max_in_flight,
            max_failures=max_failures,
            settle=settle,
            log=self.log,
            progress_every=self.progress_every,
            progress_seconds=self.progress_seconds,
            owner=lease,
        )
        self.log.info(
            "Campaign %s: %d rows (%s), up to %d requests in flight, result table %s",
            plan.campaign_id,
            len(rows),
            ", ".join(f"{n} {s}" for s, n in state.counts().items() if n),
            self.max_in_flight,
            uri_of(output),
        )
        try:
            try:
                runner.run()
            finally:  # the try's end: where every row stands
                metrics.campaign_totals(self.docsign_conn_id, plan.campaign_id, state.counts())
        except BulkStopped as err:
            self.log.error("%s", self._summary(plan, state, runner, pacer, None))
            # No result table is written for a stopped try (the table means "finished"), but the
            # Contracts page lists the campaign from this, and reads what was sent from the checkpoint.
            self.xcom_push_safe(
                context,
                STOPPED_XCOM_KEY,
                {
                    "campaign_id": plan.campaign_id,
                    "docsign_conn_id": self.docsign_conn_id,
                    "rows": len(rows),
                    "counts": state.counts(),
                    "stopped": str(err)[:1000],
                    "checkpoint": checkpoint.uri,
                    "checkpoint_conn_id": getattr(output, "conn_id", None),
                },
            )
            if err.kind == "auth":
                raise fail_now(err) from err
            raise
        table = TableFile(
            output, RESULT_COLUMNS, fmt, name="bulk_results", schema_version=RESULT_SCHEMA_VERSION
        )
        try:
            table.write(state.result_rows(plan.external_id))
            table.commit()
        except BaseException:
            table.abort()
            raise
        uri = uri_of(output)
        self.log.info("%s", self._summary(plan, state, runner, pacer, uri))
        speed = runner.throughput()
        result = {
            "campaign_id": plan.campaign_id,
            "docsign_conn_id": self.docsign_conn_id,
            "rows": len(rows),
            "counts": state.counts(),
            "adopted": speed.adopted,
            "amended": sum(1 for r in state.rows if r.note),
            "result_table": uri,
            # The object store's connection (the URI never carries it), so a reader elsewhere (the
            # Contracts page in the api-server) can open the table.
            "result_table_conn_id": getattr(output, "conn_id", None),
            "format": fmt,
            "checkpoint": checkpoint.uri,
            "requests": speed.requests,
            "answered_429": pacer.throttled,
            "envelopes_per_minute": round(speed.per_minute, 1),
            "limit_bound_per_minute": round(speed.limit_bound, 1)
            if speed.limit_bound and speed.whole_windows
            else None,
        }
        self.attach_asset_extra(
            context,
            self.asset,
            {k: result[k] for k in ("campaign_id", "result_table", "format", "counts")},
            "the counts",
        )
        return result

    # -- steps ------------------------------------------------------------------------------------

    @property
    def default_campaign_id(self) -> str:
        """The campaign of a task that names none: ``<dag id>.<task id>``, the same for every run."""
        dag_id = getattr(self, "dag_id", None) or "adhoc"
        return f"{dag_id}.{self.task_id}"

    def _plan(self) -> CampaignPlan:
        campaign = self.campaign_id if self.campaign_id not in (None, "") else self.default_campaign_id
        return CampaignPlan(
            campaign_id=str(campaign),
            key_column=self.key_column,
            template_id=str(self.template_id) if self.template_id else None,
            title=self.title,
            recipients=self.recipients,
            prefill_fields=self.prefill_fields,
            files=self.files,
            meta=self.meta,
            folder_id=self.folder_id or None,
            distribute=self.distribute,
            expiration_period=self.expiration_period,
            reminders=self.reminders,
            files_root=self.files_root,
            files_conn_id=self.files_conn_id,
        )

    def _read_rows(self) -> SourceRows:
        if isinstance(self.rows, list | tuple):
            return SourceRows.of_list(self.rows)
        source = resolve_path(self.rows, "rows")
        fmt = format_of(source, self.input_format, INPUT_FORMATS, "input")
        return read_campaign_rows(source, fmt)

    def _pace(self) -> SharedPacer:
        """One pacer for every request of this task (the hook's ``before_request``/``after_response``)."""
        pacer: SharedPacer = install_pacer(self.hook, self.reserve_fraction, self.log)
        return pacer

    def _summary(
        self, plan: CampaignPlan, state: CampaignState, runner: CampaignRunner, pacer: Any, uri: str | None
    ) -> str:
        return summary_table(
            plan.campaign_id,
            state,
            runner.throughput(),
            throttled=pacer.throttled,
            paced_seconds=pacer.waited,
            result_uri=uri,
        )

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: see :func:`airflow_provider_docsign.export.lineage.bulk_send_facets`."""
        from airflow_provider_docsign.export import lineage

        return lineage.bulk_send_facets(self, task_instance)
