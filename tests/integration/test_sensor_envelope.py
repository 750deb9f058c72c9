"""DocsignEnvelopeSensor inside real Airflow task runs (``dag.test()``) and direct pokes, against the sandbox.

Covers: poke mode, reschedule mode and deferrable mode succeed after the sandbox's simulated signers
sign (the XCom reaches the downstream task); a rejection fails the sensor with the reason and the
downstream task never runs (or both are skipped with ``soft_fail``); deleted envelopes and a refused
key fail at once; transient errors are "not yet"; and 100 envelopes cost 5 requests per poll.
"""

from __future__ import annotations

import json
import runpy
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import conn_json, numbered_signers

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor
from airflow_provider_docsign.service.expiry import mask_email

pytestmark = pytest.mark.integration


def _create(hook: DocsignHook, files: list[Path], *, signers: int = 1, distribute: bool = True) -> str:
    envelope_id = hook.create_envelope(title="Sensor test", files=files, recipients=numbered_signers(signers))
    if distribute:
        hook.distribute_envelope(envelope_id)
    return envelope_id


def _state(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "value", value))


# dag.test() on Airflow 3 runs only DAGs that a DAG bundle holds, so each test writes a small DAG
# file (parametrised by a JSON spec beside it) into a bundle of its own.
_DAG_FILE = """
import json
import pathlib
from datetime import datetime, timezone

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

if AIRFLOW_V_3_0_PLUS:
    from airflow.sdk import DAG, task
else:
    from airflow import DAG
    from airflow.decorators import task

SPEC = json.loads(pathlib.Path(__file__).with_suffix(".json").read_text())
OUT = pathlib.Path(SPEC["out"])


def _record_failure(context):
    (OUT / "failure.txt").write_text(str(context.get("exception")))


with DAG(
    dag_id=SPEC["dag_id"],
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
) as dag:
    sensor_kwargs = dict(SPEC["sensor"])
    if "mapped" in SPEC:
        # Like a mapped DocsignCreateEnvelopeOperator: one dict with envelope_id per map index.
        @task(task_id="create")
        def create(envelope_id):
            return {"envelope_id": envelope_id, "item_ids": []}

        sensor_kwargs["envelope_ids"] = create.expand(envelope_id=SPEC["mapped"])
    wait = DocsignEnvelopeSensor(task_id="wait", on_failure_callback=_record_failure, **sensor_kwargs)

    @task(task_id="record")
    def record(value):
        (OUT / "xcom.json").write_text(json.dumps(value))

    record(wait.output)
"""


@pytest.fixture
def run_dag(airflow_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """Factory: ``run_dag(name, sensor_kwargs, mapped=None)`` runs the sensor DAG once, in ``tmp_path``."""

    def run(name: str, sensor_kwargs: dict[str, Any], *, mapped: list[str] | None = None) -> Any:
        """Run ``wait >> record`` with dag.test(); ``record`` writes the sensor's XCom to ``xcom.json``.

        A failure callback on the sensor writes the exception's message to ``failure.txt``. With ``mapped``,
        a mapped upstream task returns ``{"envelope_id": ...}`` per id and the sensor waits on its XCom.
        """
        dags = tmp_path / "dags"
        dags.mkdir()
        dag_id = f"docsign_sensor_{name}_{time.time_ns()}"
        spec: dict[str, Any] = {"dag_id": dag_id, "out": str(tmp_path), "sensor": sensor_kwargs}
        if mapped is not None:
            spec["mapped"] = mapped
        (dags / f"{dag_id}.json").write_text(json.dumps(spec))
        dag_file = dags / f"{dag_id}.py"
        dag_file.write_text(_DAG_FILE)
        bundle = {
            "name": f"docsign-sensor-tests-{time.time_ns()}",
            "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
            "kwargs": {"path": str(dags), "refresh_interval": 0},
        }
        monkeypatch.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps([bundle]))
        if not AIRFLOW_V_3_0_PLUS:
            # Airflow 2.11's unit-test config picks the LocalExecutor, which 2.11 refuses with SQLite.
            monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "SequentialExecutor")
        dag = runpy.run_path(str(dag_file))["dag"]
        return dag.test()

    return run


class _AfterFirstPoll:
    """Run ``action`` in a thread once the sandbox has answered the sensor's first poll.

    The signers act only after the sensor has seen the envelopes still PENDING, so the test
    exercises waiting (and, when deferrable, the trigger) whatever the task start-up costs.
    """

    def __init__(self, sandbox: SandboxServer, action: Callable[[], None]) -> None:
        self.sandbox = sandbox
        self.action = action
        self.acted = False
        self.error: BaseException | None = None
        sandbox.clear_requests()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            for _ in range(1200):  # bounded: at most ~4 minutes
                if any(r["path"] == "/envelope/get-many" for r in self.sandbox.requests()):
                    self.action()
                    self.acted = True
                    return
                time.sleep(0.2)
        except BaseException as error:  # reported by the test through join()
            self.error = error

    def __enter__(self) -> _AfterFirstPoll:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(timeout=300)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error


def _ti_states(dag_run: Any) -> dict[str, str | None]:
    return {ti.task_id: _state(ti.state) for ti in dag_run.get_task_instances()}


def _expected_xcom(hook: DocsignHook, envelope_ids: list[str]) -> list[dict[str, Any]]:
    expected = []
    for envelope_id in envelope_ids:
        envelope = hook.get_envelope(envelope_id)
        expected.append(
            {
                "envelope_id": envelope_id,
                "status": "COMPLETED",
                "completed_at": envelope.completed_at,
                "item_ids": [item.id for item in envelope.items],
            }
        )
    return expected


# ------------------------------------------------------------------------------- successful waits
def _complete_all(sandbox: SandboxServer, envelope_ids: list[str]) -> Callable[[], None]:
    def complete() -> None:
        for envelope_id in envelope_ids:
            sandbox.complete(envelope_id)

    return complete


def test_deferrable_sensor_defers_then_succeeds(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    hook = DocsignHook()
    envelope_ids = [
        _create(hook, [make_pdf("a.pdf"), make_pdf("b.pdf", pages=2)], signers=2),
        _create(hook, [make_pdf("c.pdf")]),
    ]

    with _AfterFirstPoll(sandbox, _complete_all(sandbox, envelope_ids)) as signers:
        dag_run = run_dag(
            "deferrable",
            {"envelope_ids": envelope_ids, "deferrable": True, "poke_interval": 1, "timeout": 300},
        )

    assert signers.acted
    assert _state(dag_run.state) == "success"
    assert _ti_states(dag_run) == {"wait": "success", "record": "success"}
    # It deferred: the sensor's own poke saw PENDING, then the trigger polled until COMPLETED. The
    # trigger's log goes to stdout through structlog on Airflow 3, and to logging on Airflow 2.
    logs = capfd.readouterr().out + caplog.text
    assert "Deferring: waiting in the triggerer" in logs
    assert "all 2 envelope(s) reached COMPLETED" in logs
    assert "DocsignEnvelopeTrigger" in logs
    assert json.loads((tmp_path / "xcom.json").read_text()) == _expected_xcom(hook, envelope_ids)


def test_poke_mode_succeeds(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    hook = DocsignHook()
    envelope_id = _create(hook, [make_pdf()])

    with _AfterFirstPoll(sandbox, _complete_all(sandbox, [envelope_id])):
        dag_run = run_dag("poke", {"envelope_id": envelope_id, "poke_interval": 1, "timeout": 300})

    assert _state(dag_run.state) == "success"
    assert json.loads((tmp_path / "xcom.json").read_text()) == _expected_xcom(hook, [envelope_id])
    polls = [r for r in sandbox.requests() if r["path"] == "/envelope/get-many"]
    assert len(polls) >= 2  # it saw PENDING at least once before COMPLETED


def test_reschedule_mode_succeeds(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    hook = DocsignHook()
    envelope_id = _create(hook, [make_pdf()])

    with _AfterFirstPoll(sandbox, _complete_all(sandbox, [envelope_id])):
        dag_run = run_dag(
            "reschedule",
            {"envelope_id": envelope_id, "mode": "reschedule", "poke_interval": 1, "timeout": 300},
        )

    assert _state(dag_run.state) == "success"
    assert json.loads((tmp_path / "xcom.json").read_text()) == _expected_xcom(hook, [envelope_id])
    assert _reschedule_count(dag_run, "wait") >= 1  # the worker slot was given back between pokes


def test_waits_on_the_xcom_of_a_mapped_create_task(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    hook = DocsignHook()
    envelope_ids = [_create(hook, [make_pdf(f"{i}.pdf")]) for i in range(3)]

    with _AfterFirstPoll(sandbox, _complete_all(sandbox, envelope_ids)):
        dag_run = run_dag(
            "mapped",
            {"deferrable": True, "poke_interval": 1, "timeout": 300},
            mapped=envelope_ids,
        )

    assert _state(dag_run.state) == "success"
    # The XCom follows the map indexes, so results line up with the mapped create task.
    assert json.loads((tmp_path / "xcom.json").read_text()) == _expected_xcom(hook, envelope_ids)


def test_deferrable_timeout_fails_without_retry(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    hook = DocsignHook()
    envelope_id = _create(hook, [make_pdf()])  # nobody signs
    sandbox.clear_requests()

    dag_run = run_dag(
        "timeout",
        {"envelope_id": envelope_id, "deferrable": True, "poke_interval": 1, "timeout": 3, "retries": 2},
    )

    assert _ti_states(dag_run) == {"wait": "failed", "record": "upstream_failed"}
    error = (tmp_path / "failure.txt").read_text()
    assert "timed out" in error
    assert "COMPLETED" in error
    ti = dag_run.get_task_instance("wait")
    assert ti.try_number == 1  # a sensor timeout is final: no retry
    assert hook.get_envelope(envelope_id).status == "PENDING"


def _reschedule_count(dag_run: Any, task_id: str) -> int:
    from airflow.models.taskreschedule import TaskReschedule
    from airflow.utils.session import create_session

    with create_session() as session:
        query = session.query(TaskReschedule)
        if AIRFLOW_V_3_0_PLUS:
            ti = dag_run.get_task_instance(task_id, session=session)
            return int(query.filter(TaskReschedule.ti_id == ti.id).count())
        return int(
            query.filter(
                TaskReschedule.dag_id == dag_run.dag_id,
                TaskReschedule.run_id == dag_run.run_id,
                TaskReschedule.task_id == task_id,
            ).count()
        )


# -------------------------------------------------------------------------------- failing waits
@pytest.mark.parametrize("deferrable", [True, False], ids=["deferrable", "poke"])
def test_rejection_fails_the_task_with_the_reason_and_downstream_does_not_run(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    deferrable: bool,
) -> None:
    hook = DocsignHook()
    envelope_id = _create(hook, [make_pdf()], signers=2)
    rejecter = hook.get_envelope(envelope_id).recipients[0]

    def reject() -> None:
        sandbox.reject(envelope_id, rejecter.id, "Clause 7 is not what we agreed")

    with _AfterFirstPoll(sandbox, reject):
        dag_run = run_dag(
            "rejected",
            {
                "envelope_id": envelope_id,
                "deferrable": deferrable,
                "poke_interval": 1,
                "timeout": 300,
                "retries": 2,  # AirflowFailException: no retry is wasted
            },
        )

    assert _state(dag_run.state) == "failed"
    assert _ti_states(dag_run) == {"wait": "failed", "record": "upstream_failed"}
    assert not (tmp_path / "xcom.json").exists()  # downstream never ran
    error = (tmp_path / "failure.txt").read_text()
    assert f"envelope {envelope_id} is REJECTED" in error
    assert "Clause 7 is not what we agreed" in error
    assert f"({rejecter.role}, {mask_email(rejecter.email)})" in error
    assert rejecter.email not in error  # masked, as in every log line
    assert sandbox.api_key not in error


def test_soft_fail_skips_on_rejection(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    hook = DocsignHook()
    envelope_id = _create(hook, [make_pdf()])
    recipient_id = hook.get_envelope(envelope_id).recipients[0].id

    with _AfterFirstPoll(sandbox, lambda: sandbox.reject(envelope_id, recipient_id, "No thanks")):
        dag_run = run_dag(
            "soft_fail",
            {"envelope_id": envelope_id, "deferrable": True, "soft_fail": True, "poke_interval": 1},
        )

    assert _ti_states(dag_run) == {"wait": "skipped", "record": "skipped"}
    assert not (tmp_path / "xcom.json").exists()


# ------------------------------------------------------------------------------------ direct pokes
def test_deleted_envelope_fails_at_once(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    kept = _create(hook, [make_pdf()])
    gone = _create(hook, [make_pdf()])
    hook.delete_envelope(gone)  # PENDING: hard delete

    sensor = DocsignEnvelopeSensor(task_id="wait", envelope_ids=[kept, gone])
    with pytest.raises(AirflowFailException, match=f"envelope {gone} was not found") as info:
        sensor.poke({})  # type: ignore[arg-type]
    assert kept not in str(info.value)


def test_refused_key_fails_at_once(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, make_pdf: Callable[..., Path]
) -> None:
    wrong_key = "api_wrongkey_never_valid_456"
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, password=wrong_key))
    sensor = DocsignEnvelopeSensor(task_id="wait", envelope_id="envelope_abc")
    with pytest.raises(AirflowFailException, match="refused the API key") as info:
        sensor.poke({})  # type: ignore[arg-type]
    assert wrong_key not in str(info.value)
    # Refused once, not retried: an auth error cannot fix itself.
    assert [r["status"] for r in sandbox.requests()] == [401]


def test_transient_errors_are_not_yet(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _create(hook, [make_pdf()])
    sandbox.complete(envelope_id)
    sandbox.wait_status(envelope_id, "COMPLETED", timeout=10)
    sensor = DocsignEnvelopeSensor(task_id="wait", envelope_id=envelope_id)
    # More 503s than the hook retries: this poke gives up and says "not yet" instead of failing.
    sandbox.inject_fault(method="POST", path="/envelope/get-many", action="status", status=503, count=4)
    assert sensor.poke({}) is False  # type: ignore[arg-type]
    result = sensor.poke({})  # type: ignore[arg-type]
    assert result
    assert getattr(result, "xcom_value", None) == _expected_xcom(hook, [envelope_id])


@pytest.fixture(scope="module")
def hundred_drafts(sandbox_session: SandboxServer, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """100 draft envelopes (created once for the module; drafts never change by themselves)."""
    from airflow_provider_docsign.samples import write_sample_pdf

    pdf = write_sample_pdf(tmp_path_factory.mktemp("pdfs") / "one.pdf", title="bulk")
    hook = DocsignHook(base_url=sandbox_session.base_url, api_key=sandbox_session.api_key)
    return [_create(hook, [pdf], distribute=False) for _ in range(100)]


def test_hundred_envelopes_cost_five_requests_per_poll(
    sandbox: SandboxServer, docsign_conn: str, hundred_drafts: list[str]
) -> None:
    # As the mapped create operator returns them: dicts with envelope_id.
    sensor = DocsignEnvelopeSensor(
        task_id="wait", envelope_ids=[{"envelope_id": e} for e in hundred_drafts], poke_interval=1
    )
    sandbox.clear_requests()
    assert sensor.poke({}) is False  # type: ignore[arg-type]  # DRAFT: not COMPLETED yet
    assert sandbox.requests() == [{"method": "POST", "path": "/envelope/get-many", "status": 200}] * 5

    # The same batching in the trigger: with its deadline already past it polls exactly once.
    import asyncio

    from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger

    trigger = DocsignEnvelopeTrigger(hundred_drafts, poll_interval=0.5, deadline=time.time() - 1)
    sandbox.clear_requests()

    async def run() -> list[dict[str, Any]]:
        return [event.payload async for event in trigger.run()]

    events = asyncio.run(run())
    assert [e["status"] for e in events] == ["timeout"]
    assert sandbox.requests() == [{"method": "POST", "path": "/envelope/get-many", "status": 200}] * 5
    assert [s["status"] for s in events[0]["envelopes"]] == ["DRAFT"] * 100

    # And once they all reach the target, one poll of 5 requests returns all 100 in order.
    sensor = DocsignEnvelopeSensor(task_id="wait", envelope_ids=hundred_drafts, target_status="DRAFT")
    sandbox.clear_requests()
    result = sensor.poke({})  # type: ignore[arg-type]
    assert len(sandbox.requests()) == 5
    assert [r["envelope_id"] for r in getattr(result, "xcom_value", [])] == hundred_drafts


# ---------------------------------------------------------------------- batch waits (issue 37)
@pytest.mark.parametrize(
    "mode",
    [{"deferrable": True}, {"mode": "poke"}, {"mode": "reschedule"}],
    ids=["deferrable", "poke", "reschedule"],
)
def test_a_batch_wait_outlives_a_rejection_in_every_mode(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    mode: dict[str, Any],
) -> None:
    hook = DocsignHook()
    rejected, signed = (_create(hook, [make_pdf(f"{i}.pdf")]) for i in range(2))
    rejecter = hook.get_envelope(rejected).recipients[0]

    def act() -> None:
        sandbox.reject(rejected, rejecter.id, "Not this year")
        sandbox.wait_status(rejected, "REJECTED")
        sandbox.complete(signed)

    with _AfterFirstPoll(sandbox, act):
        dag_run = run_dag(
            "batch",
            {
                "envelope_ids": [rejected, signed],
                "max_unsigned": 1,
                "poke_interval": 1,
                "timeout": 300,
                **mode,
            },
        )

    assert _ti_states(dag_run) == {"wait": "success", "record": "success"}
    assert json.loads((tmp_path / "xcom.json").read_text()) == {
        "envelopes": 2,
        "status": "COMPLETED",
        "completed": 1,
        "unsigned": 1,
        "max_unsigned": 1,
        "by_status": {"COMPLETED": 1, "REJECTED": 1},
        "not_completed": [
            {
                "envelope_id": rejected,
                "status": "REJECTED",
                "reason": f"rejected by recipient {rejecter.id} (SIGNER, s***@example.test): 'Not this year'",
            }
        ],
        "report": None,
    }
    if mode.get("mode") == "reschedule":
        assert _reschedule_count(dag_run, "wait") >= 1


def test_a_batch_over_its_allowance_fails_and_downstream_does_not_run(
    run_dag: Callable[..., Any],
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    hook = DocsignHook()
    rejected, signed = (_create(hook, [make_pdf(f"{i}.pdf")]) for i in range(2))
    rejecter = hook.get_envelope(rejected).recipients[0]

    def act() -> None:
        sandbox.reject(rejected, rejecter.id, "Not this year")
        sandbox.wait_status(rejected, "REJECTED")
        sandbox.complete(signed)

    with _AfterFirstPoll(sandbox, act):
        dag_run = run_dag(
            "batch_fails",
            {
                "envelope_ids": [rejected, signed],
                "max_unsigned": 0,
                "deferrable": True,
                "poke_interval": 1,
                "timeout": 300,
                "retries": 2,
            },
        )

    assert _ti_states(dag_run) == {"wait": "failed", "record": "upstream_failed"}
    assert dag_run.get_task_instance("wait").try_number == 1  # AirflowFailException: no retry
    error = (tmp_path / "failure.txt").read_text()
    assert "1 of 2 envelope(s) did not reach COMPLETED (1 REJECTED); max_unsigned allows 0" in error
    assert f"envelope {rejected} is REJECTED: rejected by recipient {rejecter.id}" in error
    assert hook.get_envelope(signed).status == "COMPLETED"  # it waited for the other one to settle
    assert rejecter.email not in error


def test_a_result_table_on_s3_gets_its_report_beside_it(
    sandbox: SandboxServer, docsign_conn: str, make_s3_bucket: Callable[..., Any]
) -> None:
    client = make_s3_bucket("docsign-wait", conn_id="wait_s3")
    rejecter = {
        "email": "rita@example.test",
        "name": "Rita",
        "role": "SIGNER",
        "signingStatus": "REJECTED",
        "rejectionReason": "Too expensive",
    }
    done, rejected = sandbox.seed(
        [
            {"title": "Signed", "status": "COMPLETED", "completedAt": "2026-11-20T10:00:00.000Z"},
            {"title": "Rejected", "status": "REJECTED", "recipients": [rejecter]},
        ]
    )
    rows = [
        {"row_key": "k1", "external_id": "c(k1)", "envelope_id": done, "status": "sent"},
        {"row_key": "k2", "external_id": "c(k2)", "envelope_id": rejected, "status": "sent"},
    ]
    body = "".join(json.dumps(r) + "\n" for r in rows)
    client.put_object(Bucket="docsign-wait", Key="renewals/results.data", Body=body.encode())

    table = "s3://wait_s3@docsign-wait/renewals/results.data"
    sensor = DocsignEnvelopeSensor(
        task_id="wait", result_table=table, result_table_format="jsonl", max_unsigned=0.5, timeout=30
    )
    value = sensor.execute({})  # type: ignore[arg-type]

    assert value["report"] == "s3://docsign-wait/renewals/results.data.outcome.jsonl"  # no connection id
    assert (value["completed"], value["unsigned"], value["max_unsigned"]) == (1, 1, 1)
    keys = sorted(o["Key"] for o in client.list_objects_v2(Bucket="docsign-wait")["Contents"])
    assert keys == ["renewals/results.data", "renewals/results.data.outcome.jsonl"]  # no temporary left
    report = client.get_object(Bucket="docsign-wait", Key="renewals/results.data.outcome.jsonl")[
        "Body"
    ].read()
    lines = [json.loads(x) for x in report.decode().splitlines()]
    assert [(x["row_key"], x["external_id"], x["status"]) for x in lines] == [
        ("k1", "c(k1)", "COMPLETED"),
        ("k2", "c(k2)", "REJECTED"),
    ]
    assert "r***@example.test" in lines[1]["reason"]
    assert "'Too expensive'" in lines[1]["reason"]
    # Without result_table_format the name does not tell the format: the task says so, sending nothing.
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="give result_table_format"):
        DocsignEnvelopeSensor(task_id="wait", result_table=table).execute({})  # type: ignore[arg-type]
    assert sandbox.requests() == []
