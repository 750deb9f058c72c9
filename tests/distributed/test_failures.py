"""Losing a worker mid-request, restarting the triggerer and the scheduler: the runs still succeed.

* Worker loss: the sandbox holds the create request (a ``delay`` fault) while the worker running it is
  killed with SIGKILL (its process group and every process in its home, as if the host died). The
  scheduler notices the missing heartbeat, the retry runs on the other worker, and exactly one
  envelope exists for the run's ``external_id``.
* Scheduler and triggerer restarts, in one test with two runs at once: the scheduler restarts while
  one run is under way, the triggerer while the other's sensor is deferred; both complete, one archive
  each.
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


def test_triggerer_and_scheduler_restarts_mid_run(stack: Stack, api: Any, s3: Any) -> None:
    # Two runs at once (one wait for the sandbox's signature instead of two): the scheduler restarts
    # while one run is under way, the triggerer while the other's sensor is deferred.
    sched = api.trigger(DAG_ID, customer_id="SCHED-1", archive_dir=archive_prefix("scheduler-restart"))
    trig = api.trigger(DAG_ID, customer_id="TRIG-1", archive_dir=archive_prefix("triggerer-restart"))
    api.wait("the run to be under way", lambda: _ti(api, sched, "render_pdfs")["state"] == "success")
    stack.stop_component("scheduler")
    assert not stack.alive("scheduler")
    stack.start_scheduler()
    api.wait("the sensor to defer", lambda: _ti(api, trig, "wait_for_signatures")["state"] == "deferred")
    stack.stop_component("triggerer")
    assert not stack.alive("triggerer")
    stack.start_triggerer()

    assert api.finish(DAG_ID, trig) == "success"
    assert _ti(api, trig, "archive")["try_number"] == 1
    (manifest,) = manifests(s3, "triggerer-restart/")
    assert manifest["external_id"] == f"contract-{trig}-TRIG-1"
    assert api.finish(DAG_ID, sched) == "success"
    (manifest,) = manifests(s3, "scheduler-restart/")
    assert manifest["external_id"] == f"contract-{sched}-SCHED-1"
