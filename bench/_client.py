"""One client in a fresh process: upload or download with one of the clients being compared.

Usage: ``python bench/_client.py '<json spec>'`` (``bench/_served.py`` starts and drives it). The spec
names the ``client`` (``hook``, ``naive``, ``sdk``), the ``op`` (``upload`` or ``download``), the
sandbox ``base_url``, an optional small ``warmup`` job and ``max_jobs``.

The process imports its client, makes one cheap authenticated call and the warm-up job, then prints a
``ready`` line and takes its jobs one per line of stdin (files to upload, or item ids and destinations
to download), answering each with one JSON line (:func:`serve`): the parent starts every job itself,
so the transfers of several clients can alternate one by one. For each job it resets its peak-RSS
counter first, and reports the wall time of the operation alone and the peak RSS growth above the RSS
at the reset. A client that cannot do the operation reports ``ok: false`` with the error.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import API_KEY, docsign_conn_json, peak_mb, reset_peak, setup_airflow_env, short_error


def _payload(title: str) -> dict[str, Any]:
    return {"type": "DOCUMENT", "title": title}


# ------------------------------------------------------------------------------------------- hook
def hook_setup(spec: dict[str, Any]) -> Any:
    setup_airflow_env()
    os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(spec["base_url"])
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    hook = DocsignHook()
    ok, message = hook.test_connection()
    if not ok:
        raise RuntimeError(f"test_connection failed: {message}")
    return hook


def hook_upload(hook: Any, spec: dict[str, Any]) -> dict[str, Any]:
    envelope_id = hook.create_envelope(title=spec["title"], files=[Path(p) for p in spec["files"]])
    return {"envelope_id": envelope_id}


def hook_download(hook: Any, spec: dict[str, Any]) -> dict[str, Any]:
    digests = []
    for item_id, dest in zip(spec["items"], spec["dests"], strict=True):
        result = hook.download_envelope_item(item_id, Path(dest), version=spec["version"])
        digests.append(result.sha256)
    return {"sha256": digests}


# ------------------------------------------------------------------------------------------ naive
def naive_setup(spec: dict[str, Any]) -> Any:
    import requests

    session = requests.Session()
    session.headers["Authorization"] = API_KEY
    session.get(spec["base_url"] + "/envelope", params={"perPage": 1}, timeout=30).raise_for_status()
    return session


def naive_upload(session: Any, spec: dict[str, Any]) -> dict[str, Any]:
    # What most users write first: requests builds the whole multipart body in memory.
    handles = [open(p, "rb") for p in spec["files"]]  # noqa: SIM115
    try:
        response = session.post(
            spec["base_url"] + "/envelope/create",
            data={"payload": json.dumps(_payload(spec["title"]))},
            files=[
                ("files", (Path(p).name, fh, "application/pdf"))
                for p, fh in zip(spec["files"], handles, strict=True)
            ],
            timeout=300,
        )
    finally:
        for fh in handles:
            fh.close()
    response.raise_for_status()
    return {"envelope_id": response.json()["id"]}


def naive_download(session: Any, spec: dict[str, Any]) -> dict[str, Any]:
    digests = []
    for item_id, dest in zip(spec["items"], spec["dests"], strict=True):
        response = session.get(
            f"{spec['base_url']}/envelope/item/{item_id}/download",
            params={"version": spec["version"]},
            timeout=300,
        )
        response.raise_for_status()
        body = response.content
        Path(dest).write_bytes(body)
        digests.append(hashlib.sha256(body).hexdigest())
    return {"sha256": digests}


# -------------------------------------------------------------------------------------------- sdk
def sdk_setup(spec: dict[str, Any]) -> Any:
    from documenso_sdk import Documenso

    sdk = Documenso(api_key=API_KEY, server_url=spec["base_url"], timeout_ms=300_000)
    # Warm-up: the SDK's find call (its response model may or may not parse the sandbox's answer).
    try:
        sdk.envelope.envelope_find(per_page=1)
    except Exception as exc:
        print(json.dumps({"warmup_error": short_error(exc)}), file=sys.stderr)
    return sdk


def sdk_upload(sdk: Any, spec: dict[str, Any]) -> dict[str, Any]:
    handles = [open(p, "rb") for p in spec["files"]]  # noqa: SIM115
    try:
        response = sdk.envelopes.create(
            payload={"title": spec["title"], "type": "DOCUMENT"},
            files=[
                {"file_name": Path(p).name, "content": fh, "content_type": "application/pdf"}
                for p, fh in zip(spec["files"], handles, strict=True)
            ],
        )
    finally:
        for fh in handles:
            fh.close()
    return {"envelope_id": response.id}


def sdk_download(sdk: Any, spec: dict[str, Any]) -> dict[str, Any]:
    digests = []
    for item_id, dest in zip(spec["items"], spec["dests"], strict=True):
        response = sdk.envelopes.items.download(envelope_item_id=item_id, version=spec["version"])
        result = getattr(response, "result", response)
        if isinstance(result, (bytes, bytearray)):
            Path(dest).write_bytes(result)
            digests.append(hashlib.sha256(result).hexdigest())
        else:
            raise TypeError(f"SDK returned {type(result).__name__}, not the PDF bytes: {str(result)[:120]!r}")
    return {"sha256": digests}


CLIENTS = {
    "hook": (hook_setup, {"upload": hook_upload, "download": hook_download}),
    "naive": (naive_setup, {"upload": naive_upload, "download": naive_download}),
    "sdk": (sdk_setup, {"upload": sdk_upload, "download": sdk_download}),
}


def run_job(op: Any, state: Any, spec: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """Run one job with the peak-RSS counter reset first; its wall and CPU time, and RSS growth."""
    gc.collect()
    result: dict[str, Any] = {}
    baseline = reset_peak()
    cpu0 = time.process_time()
    start = time.perf_counter()
    try:
        result.update(op(state, {**spec, **job}))
        result["ok"] = True
    except Exception as exc:
        result.update(ok=False, stage=spec["op"], error=short_error(exc))
    result["wall_s"] = time.perf_counter() - start
    result["cpu_s"] = time.process_time() - cpu0
    result["baseline_rss_mb"] = baseline
    result["peak_growth_mb"] = peak_mb() - baseline
    return result


def serve(op: Any, state: Any, spec: dict[str, Any], out: dict[str, Any]) -> None:
    """One job per line of stdin, one JSON result per line of stdout.

    The parent decides when each job starts, so the clients' uploads can alternate one by one
    (``bench_upload.py``). At most ``max_jobs`` jobs; an empty line or the end of stdin ends it.
    """
    print(json.dumps({**out, "ready": True}), flush=True)
    for _ in range(int(spec.get("max_jobs", 100))):
        line = sys.stdin.readline()
        if not line.strip():
            break
        print(json.dumps(run_job(op, state, spec, json.loads(line))), flush=True)


def main() -> None:
    t0 = time.perf_counter()  # the client's own imports happen in setup(), so they are timed
    spec = json.loads(sys.argv[1])
    setup, ops = CLIENTS[spec["client"]]
    op = ops[spec["op"]]
    out: dict[str, Any] = {"client": spec["client"], "op": spec["op"]}
    try:
        state = setup(spec)
        if spec.get("warmup"):
            # One small operation of the same kind first, so that lazy imports and first-use set-up
            # (multipart encoder, PDF validation, response models) are not counted in the figures.
            op(state, {**spec, **spec["warmup"]})
    except Exception as exc:
        out.update(ok=False, stage="setup", error=short_error(exc))
        print(json.dumps(out), flush=True)
        return
    out["startup_s"] = time.perf_counter() - t0
    serve(op, state, spec, out)


if __name__ == "__main__":
    main()
