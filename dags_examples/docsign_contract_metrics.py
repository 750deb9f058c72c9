"""Contract metrics: export the signing process daily, then answer "how long do customers take to sign?".

What this DAG shows:

* ``export`` (:class:`~airflow_provider_docsign.operators.DocsignExportEnvelopesOperator`) writes the
  day's ``envelopes``, ``recipients`` and ``field_values`` partitions (JSON Lines) below the export
  directory, with e-mails, names and free-text values hashed (``pii="hash"``: the key is the
  ``pii_hash_key`` extra of the ``docsign_default`` connection). It reads each envelope's sending time
  from its audit log (``read_sent_times=True``), which costs one request per envelope: fine for a
  daily volume of contracts, switch it off for very large exports. Re-running a day replaces that
  day's partition; the task emits an asset event for the export directory.
* ``metrics`` reads every ``envelopes`` partition written so far with the standard library (JSON Lines
  is one ``json.loads`` per line; no query engine is needed for a few thousand rows), keeps the latest
  row of each envelope, and computes per template the median and 90th percentile of the time to sign
  (the ``seconds_to_sign`` column: from sending to the last signature) with the provider's one
  definition of a percentile (nearest-rank, ``airflow_provider_docsign.service.turnaround.percentile``,
  SQL's ``percentile_disc``), so the report, the Contracts page and a warehouse query give the same
  numbers, and the number of *stalled* envelopes: still PENDING, created more than
  ``stalled_hours`` before the end of the interval (the provider's definition,
  ``airflow_provider_docsign.service.stalled``, shared with the Contracts page). It writes
  ``time_to_sign.json`` and a bar chart ``time_to_sign.png`` (matplotlib, the ``metrics`` extra) to
  ``reports/date=YYYY-MM-DD/``.

Configuration: the ``docsign_default`` connection (with ``pii_hash_key`` in its extra), the export
directory ``$DOCSIGN_EXAMPLE_EXPORT_DIR`` (default ``$AIRFLOW_HOME/docsign-contract-data``) and the param
``stalled_hours`` (default 72).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

try:
    from airflow.sdk import DAG, Param, task
except ImportError:  # Airflow 2.11
    from airflow.decorators import task
    from airflow.models.dag import DAG
    from airflow.models.param import Param
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_provider_docsign.operators import DocsignExportEnvelopesOperator

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
EXPORT_DIR = os.environ.get("DOCSIGN_EXAMPLE_EXPORT_DIR") or os.path.join(
    AIRFLOW_HOME, "docsign-contract-data"
)

with DAG(
    dag_id="docsign_contract_metrics",
    description="Daily contract-data export and time-to-sign per template.",
    # A daily interval [midnight, next midnight): the export takes that interval's changes.
    schedule=CronDataIntervalTimetable("@daily", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["docsign", "example"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=10)},
    params={"stalled_hours": Param(72, type="number", minimum=0)},
    doc_md=__doc__,
) as dag:
    export = DocsignExportEnvelopesOperator(
        task_id="export",
        destination=EXPORT_DIR,
        overlap=timedelta(hours=1),  # changes that landed just before midnight are caught again
        read_sent_times=True,
    )

    @task
    def metrics(
        data_interval_start: Any = None, data_interval_end: Any = None, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Time-to-sign per template (median, p90) and stalled envelopes, as JSON and a PNG chart."""
        import json
        from pathlib import Path
        from types import SimpleNamespace

        from airflow_provider_docsign.export.rows import parse_ts, partition_date
        from airflow_provider_docsign.service.stalled import stalled as is_stalled
        from airflow_provider_docsign.service.turnaround import percentile

        assert params is not None
        root = Path(EXPORT_DIR)
        end = parse_ts(data_interval_end)
        assert end is not None
        latest: dict[str, dict[str, Any]] = {}
        for part in sorted(root.glob("envelopes/date=*/part-0000.jsonl")):
            if part.parent.name > f"date={partition_date(parse_ts(data_interval_start) or end)}":
                continue  # a later day's partition (a backfill of an older day) is not this day's view
            with part.open(encoding="utf-8") as lines:
                for line in lines:
                    row = json.loads(line)
                    seen = latest.get(row["envelope_id"])
                    if seen is None or (row["updated_at"] or "") >= (seen["updated_at"] or ""):
                        latest[row["envelope_id"]] = row
        seconds: dict[str, list[float]] = {}
        for row in latest.values():
            value = row.get("seconds_to_sign")  # null unless COMPLETED with a known send time
            if value is not None:
                seconds.setdefault(f"template {row['template_id'] or 'none'}", []).append(float(value))
        per_template = {}
        for name, values in sorted(seconds.items()):
            median, p90 = percentile(values, 0.5), percentile(values, 0.9)
            assert median is not None  # values is never empty here
            assert p90 is not None
            per_template[name] = {
                "envelopes": len(values),
                "median_seconds": median,
                "p90_seconds": p90,
                "median_hours": round(median / 3600, 4),
                "p90_hours": round(p90 / 3600, 4),
            }
        # The provider's one definition of "stalled" (the Contracts page and the escalation example use
        # it too): PENDING for longer than the threshold, or with an expired signing link. The export's
        # envelope rows carry no link expiry, so here it is the age alone.
        threshold = float(params["stalled_hours"]) / 24
        stalled = sum(
            1
            for row in latest.values()
            if is_stalled(
                SimpleNamespace(status=row["status"], created_at=row["created_at"], recipients=()),
                end,
                older_than_days=threshold,
            )
        )
        report = {"date": partition_date(parse_ts(data_interval_start) or end), "time_to_sign": per_template}
        report["stalled_envelopes"] = stalled
        out = root / "reports" / f"date={report['date']}"
        out.mkdir(parents=True, exist_ok=True)
        (out / "time_to_sign.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")

        try:
            import matplotlib
        except ImportError:
            raise RuntimeError("the chart needs matplotlib: install the 'metrics' extra") from None
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(per_template)
        fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], [per_template[n]["median_hours"] for n in names], 0.4, label="median")
        ax.bar([x + 0.2 for x in xs], [per_template[n]["p90_hours"] for n in names], 0.4, label="p90")
        ax.set_xticks(list(xs), [f"{n}\n({per_template[n]['envelopes']} signed)" for n in names])
        ax.set_ylabel("hours from sent to the last signature")
        ax.set_title(f"Time to sign per template, {report['date']} ({stalled} stalled)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "time_to_sign.png", metadata={"Software": None})
        plt.close(fig)
        return report

    export >> metrics()
