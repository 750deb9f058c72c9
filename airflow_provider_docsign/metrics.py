"""The provider's metrics, sent through Airflow's own ``Stats`` (StatsD, DogStatsD or OpenTelemetry).

Nothing is sent unless ``[metrics] statsd_on``, ``statsd_datadog_enabled`` or ``otel_on`` is set; then
every wrapper here returns at once (one boolean read), and no caller makes a request for a metric's sake
(:func:`enabled` says whether to). A failure to send is logged once at DEBUG and swallowed: a metric
never fails a task.

**Names** are lower-case, dot-separated, under ``docsign.`` (Airflow puts its ``[metrics]
statsd_prefix`` before them), made only of fixed words (:data:`NAMES`, an endpoint's operation, a status
class), and checked as Airflow checks them (letters, digits, ``_.-``, 250 characters at most with the
prefix). Where the backend drops tags (plain StatsD, without DogStatsD, InfluxDB tags or OpenTelemetry), a
request's operation and status class also go in a name of their own (``docsign.requests.<operation>.
<status_class>``), as Airflow puts a task's state in ``ti.finish.<dag>.<task>.<state>``; where tags are
carried that second datagram would say nothing new, and is not sent (it was a tenth of the request loop
against a local sandbox: ``bench/bench_turnaround_metrics.py``).

**Tags** are ``conn_id`` and, for a campaign, ``campaign``. Both are text a person typed: a value is sent
as it is only when it is short and plain (:data:`SAFE_TAG`: ASCII letters, digits, ``_.-``, at most 64),
else as ``c-`` and 12 hex digits of its SHA-256 (:func:`safe_tag`), so that an e-mail, a title, a
template's text or a StatsD metacharacter (``|#:,@``) never reaches a datagram. Nothing else a user wrote
(an external id, a row key, an envelope title, the API key) is ever a name or a tag.

The catalogue of names is ``docs/metrics.md``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

PREFIX = "docsign"
#: A tag value sent as it is; anything else is sent as its digest (:func:`safe_tag`).
SAFE_TAG = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: One word of a name (an operation, a status class, a fixed word).
_WORD = re.compile(r"[a-z0-9_]{1,64}")
#: A whole name, as Airflow's validator accepts it (its prefix and a dot come on top: kept under 250).
_NAME = re.compile(r"[a-z0-9_.-]{1,200}")
#: The status classes of a request (``error``: no answer at all).
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx", "error")

#: Every metric the provider sends, by kind (``docs/metrics.md`` says when and what each means).
NAMES: dict[str, str] = {
    "docsign.requests": "counter",
    "docsign.requests.<operation>.<status_class>": "counter",
    "docsign.rate_limited": "counter",
    "docsign.rate_limited.<operation>": "counter",
    "docsign.retries": "counter",
    "docsign.retries.<operation>": "counter",
    "docsign.retry_wait": "timer",
    "docsign.rate_window_wait": "timer",
    "docsign.envelopes.created": "counter",
    "docsign.envelopes.sent": "counter",
    "docsign.envelopes.completed": "counter",
    "docsign.envelopes.rejected": "counter",
    "docsign.envelopes.cancelled": "counter",
    "docsign.envelopes.expired": "counter",
    "docsign.time_to_sign": "timer",
    "docsign.campaign.rows.sent": "counter",
    "docsign.campaign.rows.failed": "counter",
    "docsign.campaign.rows.invalid": "counter",
    "docsign.campaign.sent": "gauge",
    "docsign.campaign.created": "gauge",
    "docsign.campaign.failed": "gauge",
    "docsign.campaign.invalid": "gauge",
    "docsign.campaign.in_flight": "gauge",
    "docsign.campaign.pending": "gauge",
}

_state: dict[str, Any] = {"on": None, "tagged": None, "warned": False}


def enabled() -> bool:
    """Whether Airflow sends metrics in this process (``[metrics]``, read once per process)."""
    on = _state["on"]
    if on is None:
        on = _state["on"] = _read_config(("statsd_on", "statsd_datadog_enabled", "otel_on"))
    return bool(on)


def tags_carried() -> bool:
    """Whether the backend carries tags (DogStatsD, StatsD with InfluxDB tags, OpenTelemetry)."""
    tagged = _state["tagged"]
    if tagged is None:
        tagged = _state["tagged"] = _read_config(
            ("statsd_datadog_enabled", "statsd_influxdb_enabled", "otel_on")
        )
    return bool(tagged)


def _read_config(options: tuple[str, ...]) -> bool:
    try:
        from airflow_provider_docsign._compat import conf

        return any(conf.getboolean("metrics", option, fallback=False) for option in options)
    except Exception as error:  # a broken config never breaks a task: no metrics then
        _failed(error)
        return False


def reset() -> None:
    """Read ``[metrics]`` again at the next emit (tests, and a process whose config changed)."""
    _state["on"] = _state["tagged"] = None


def safe_tag(value: Any) -> str:
    """``value`` as a tag: itself when short and plain (:data:`SAFE_TAG`), else ``c-`` + 12 hex of SHA-256.

    :param value: A connection id or a campaign id (text a person typed).
    """
    return _safe_text(str(value))


@functools.lru_cache(maxsize=1024)
def _safe_text(text: str) -> str:
    if SAFE_TAG.fullmatch(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"c-{digest[:12]}"


@functools.lru_cache(maxsize=256)
def word(text: str) -> str:
    """A fixed-vocabulary phrase as one word of a name: ``"get envelope"`` -> ``get_envelope``.

    Anything that does not reduce to a plain word is ``other`` (never free text in a name).
    """
    slug = re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")
    return slug if _WORD.fullmatch(slug) else "other"


def name(*parts: str) -> str | None:
    """``docsign.<parts>`` when every part is a plain word, else ``None`` (the metric is not sent)."""
    full = ".".join((PREFIX, *parts))
    if all(_WORD.fullmatch(p) for p in parts) and _NAME.fullmatch(full):
        return full
    return None


def tags(conn_id: Any = None, campaign: Any = None, **fixed: str) -> dict[str, str]:
    """The tags of a metric: ``conn_id`` and ``campaign`` made safe, and fixed-vocabulary ones as they are.

    :param conn_id: The connection id (made safe with :func:`safe_tag`).
    :param campaign: A campaign id (made safe with :func:`safe_tag`).
    :param fixed: Tags from a fixed vocabulary (operation, status class, source); each must be a word.
    """
    result: dict[str, str] = {}
    if conn_id is not None:
        result["conn_id"] = safe_tag(conn_id)
    if campaign is not None:
        result["campaign"] = safe_tag(campaign)
    for key, value in fixed.items():
        result[key] = value if _WORD.fullmatch(str(value)) else "other"
    return result


def _failed(error: BaseException) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        log.debug(
            "Docsign metrics: sending failed and is skipped from now on quietly: %s", type(error).__name__
        )


def _stats() -> Any:
    from airflow_provider_docsign._compat import ready_stats

    return ready_stats()


def incr(metric: str | None, count: int = 1, *, tags: Mapping[str, str] | None = None) -> None:
    """Add ``count`` to the counter ``metric`` (nothing when metrics are off or the name is ``None``)."""
    if metric is None or not enabled():
        return
    try:
        _stats().incr(metric, count, tags=dict(tags or {}))
    except Exception as error:
        _failed(error)


def timing(metric: str | None, seconds: float, *, tags: Mapping[str, str] | None = None) -> None:
    """Record ``seconds`` in the timer ``metric`` (sent in milliseconds, as Airflow 3 sends its timers)."""
    if metric is None or not enabled():
        return
    try:
        # Milliseconds as a number: every backend of both Airflow versions sends it as it is (a
        # timedelta is sent in seconds by 2.11's DogStatsD and OTel loggers unless
        # [metrics] timer_unit_consistency is on).
        _stats().timing(metric, max(0.0, float(seconds)) * 1000.0, tags=dict(tags or {}))
    except Exception as error:
        _failed(error)


def gauge(metric: str | None, value: float, *, tags: Mapping[str, str] | None = None) -> None:
    """Set the gauge ``metric`` to ``value``."""
    if metric is None or not enabled():
        return
    try:
        _stats().gauge(metric, float(value), tags=dict(tags or {}))
    except Exception as error:
        _failed(error)


# -- the emit points: one function each, so that a name is written once ------------------------------


def status_class(status: int | None) -> str:
    """``2xx`` ... ``5xx`` for an HTTP status, ``error`` for none (no answer)."""
    if status is None or not 200 <= status < 600:
        return "error"
    return f"{status // 100}xx"


def request(conn_id: Any, what: str, status: int | None) -> None:
    """One attempt of a request: ``docsign.requests`` (and a 429: ``docsign.rate_limited``).

    :param conn_id: The hook's connection id.
    :param what: The endpoint's description from ``hooks/_endpoints.py`` (a fixed vocabulary).
    :param status: The HTTP status, or ``None`` when no answer came.
    """
    if not enabled():
        return
    operation, klass = word(what or "other"), status_class(status)
    by_name = not tags_carried()
    incr("docsign.requests", tags=tags(conn_id, operation=operation, status_class=klass))
    if by_name:
        incr(name("requests", operation, klass), tags=tags(conn_id))
    if status == 429:
        incr("docsign.rate_limited", tags=tags(conn_id, operation=operation))
        if by_name:
            incr(name("rate_limited", operation), tags=tags(conn_id))


def retry(conn_id: Any, what: str, delay: float) -> None:
    """A retry is coming after ``delay`` seconds: ``docsign.retries`` and the ``docsign.retry_wait`` timer."""
    if not enabled():
        return
    operation = word(what or "other")
    incr("docsign.retries", tags=tags(conn_id, operation=operation))
    if not tags_carried():
        incr(name("retries", operation), tags=tags(conn_id))
    timing("docsign.retry_wait", delay, tags=tags(conn_id, operation=operation))


def rate_window_wait(conn_id: Any, seconds: float, waiter: str) -> None:
    """Time spent waiting for the rate window before a request (the pacers): ``docsign.rate_window_wait``.

    :param waiter: Who waited: ``pacer`` (a task's requests) or ``poller`` (the triggerer's reads).
    """
    if seconds > 0:
        timing("docsign.rate_window_wait", seconds, tags=tags(conn_id, waiter=waiter))


def envelopes(event: str, conn_id: Any, count: int = 1) -> None:
    """``docsign.envelopes.<event>``: created, sent, completed, rejected, cancelled or expired."""
    if count > 0:
        incr(name("envelopes", event), count, tags=tags(conn_id))


def time_to_sign(conn_id: Any, seconds: float | None, source: str) -> None:
    """``docsign.time_to_sign``: from sent to the last signature (``service/turnaround.py``'s number).

    :param source: Where the send time came from (``audit``, ``campaign``, ``task``).
    """
    if seconds is not None:
        timing("docsign.time_to_sign", seconds, tags=tags(conn_id, source=source))


def campaign_rows(outcome: str, conn_id: Any, campaign: Any, count: int = 1) -> None:
    """``docsign.campaign.rows.<outcome>`` as rows finish: ``sent``, ``failed``, ``invalid``."""
    if count > 0:
        incr(name("campaign", "rows", outcome), count, tags=tags(conn_id, campaign))


def campaign_row(conn_id: Any, campaign: Any, action: str, state: str) -> None:
    """A campaign's row answered by the service in this try (the bulk engine's dispatcher).

    Sent: ``docsign.campaign.rows.sent`` and ``docsign.envelopes.sent``; made by this try's request
    (``action`` ``send``): ``docsign.envelopes.created`` too. A row a look-up finds already sent by an
    earlier try is not counted again; one it finds created is counted when this try sends it.

    :param action: What was done: ``send``, ``resolve`` (a look-up) or ``finish`` (a distribute).
    :param state: The row's state after it: ``sent``, ``created``, ...
    """
    if not enabled():
        return
    if action == "send" and state in ("sent", "created"):
        envelopes("created", conn_id)
    if state == "sent":
        envelopes("sent", conn_id)
        campaign_rows("sent", conn_id, campaign)


def campaign_totals(conn_id: Any, campaign: Any, counts: Mapping[str, int]) -> None:
    """Gauges at the end of a campaign's try: rows per state, ``docsign.campaign.<state>``.

    :param counts: Rows per state (sent, created, failed, invalid, in_flight, pending).
    """
    if not enabled():
        return
    for key in ("sent", "created", "failed", "invalid", "in_flight", "pending"):
        gauge(name("campaign", key), counts.get(key, 0), tags=tags(conn_id, campaign))
