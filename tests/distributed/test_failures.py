"""Losing a worker mid-request, restarting the triggerer and the scheduler: the runs still succeed.

* Worker loss: the sandbox holds the create request (a ``delay`` fault) while the worker running it is
  killed with SIGKILL (its process group and every process in its home, as if the host died). The
  scheduler notices the missing heartbeat, the retry runs on the other worker, and exactly one
  envelope exists for the run's ``external_id``.
* Triggerer restart while the sensor is deferred: the wait resumes, one archive.
* Scheduler restart mid-run: the run completes.
"""

from __future__ import annotations

from typing import Any

import pytest
from stack import Stack

from .dist_helpers import archive_prefix, hostnames, manifests

pytestmark = pytest.mark.distributed

DAG_ID = "docsign_contract_signing"
HOLD_SECONDS = 20.0


def _ti(api: Any, run_id: str, task_id: str) -> dict[str, Any]:
    (ti,) = [t for t in api.task_instances(DAG_ID, run_id) if t["task_id"] == task_id]
    return ti


def test_worker_killed_mid_create_retries_on_the_other_worker(
    stack: Stack, api: Any, sandbox: Any, db: Any, s3: Any, docsign_hook: Any
) -> None:
    fault = sandbox.inject_fault(method="POST", path="/envelope/create", action="delay", delay=HOLD_SECONDS)
    run_id = api.trigger(DAG_ID, customer_id="LOSS-1", archive_dir=archive_prefix("worker-loss"))
    # The fault is consumed when the create request arrives: from then on the sandbox holds it.
    api.wait("the create to be held", lambda: fault not in {f["id"] for f in sandbox.faults()}, interval=0.5)
    first_host = hostnames(db, DAG_ID, run_id)[("create_envelope", -1)]
    victim = first_host.split(".")[0]
    try:
        assert stack.kill_host(victim)
        assert not stack.alive(victim)
        assert api.finish(DAG_ID, run_id) == "success"
    finally:
        stack.start_worker(victim)

    create = _ti(api, run_id, "create_envelope")
    assert create["try_number"] == 2
    survivor = ({"worker1", "worker2"} - {victim}).pop()
    assert hostnames(db, DAG_ID, run_id)[("create_envelope", -1)] == f"{survivor}.stack.test"
    assert len(docsign_hook.find_envelopes_by_external_id(f"contract-{run_id}-LOSS-1")) == 1
    assert len(manifests(s3, "worker-loss/")) == 1


def test_triggerer_restart_while_the_sensor_is_deferred(stack: Stack, api: Any, s3: Any) -> None:
    run_id = api.trigger(DAG_ID, customer_id="TRIG-1", archive_dir=archive_prefix("triggerer-restart"))
    api.wait("the sensor to defer", lambda: _ti(api, run_id, "wait_for_signatures")["state"] == "deferred")
    stack.stop_component("triggerer")
    assert not stack.alive("triggerer")
    stack.start_triggerer()

    assert api.finish(DAG_ID, run_id) == "success"
    assert _ti(api, run_id, "archive")["try_number"] == 1
    (manifest,) = manifests(s3, "triggerer-restart/")
    assert manifest["external_id"] == f"contract-{run_id}-TRIG-1"


def test_scheduler_restart_mid_run(stack: Stack, api: Any, s3: Any) -> None:
    run_id = api.trigger(DAG_ID, customer_id="SCHED-1", archive_dir=archive_prefix("scheduler-restart"))
    api.wait("the run to be under way", lambda: _ti(api, run_id, "render_pdfs")["state"] == "success")
    stack.stop_component("scheduler")
    assert not stack.alive("scheduler")
    stack.start_scheduler()

    assert api.finish(DAG_ID, run_id) == "success"
    assert len(manifests(s3, "scheduler-restart/")) == 1
