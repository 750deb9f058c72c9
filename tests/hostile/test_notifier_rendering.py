"""DocsignNotifier called again and again with data that looks like a template.

Airflow renders a notifier's template fields in place, and one instance lives in ``default_args`` for
every task of a DAG: each call must render the DAG's own templates, never an earlier call's output, so
that an exception's text is data, never a template. Counted at the sandbox: what each envelope holds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from template_helpers import field

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.notifications import DocsignNotifier
from airflow_provider_docsign.sandbox import SandboxServer


def _template(hook: DocsignHook, pdf: Path) -> str:
    return hook.create_template(
        title="Incident",
        files=[pdf],
        recipients=[
            {
                "email": "oncall@placeholder.test",
                "name": "On call",
                "role": "SIGNER",
                "fields": [
                    field("TEXT", 1, 10, "error"),
                    field("TEXT", 1, 30, "run"),
                    field("SIGNATURE", 1, 80),
                ],
            }
        ],
    )


def _context(run_id: str, error: str, api_key: str) -> dict[str, Any]:
    # ``conn`` as Airflow's context offers it: conn.<id>.password is the connection's secret.
    return {
        "run_id": run_id,
        "exception": RuntimeError(error),
        "conn": SimpleNamespace(docsign_default=SimpleNamespace(password=api_key)),
        "params": {},
        "dag": None,  # Airflow 2.11 reads it (the template environment of a DAG, none here)
    }


def test_one_instance_called_twice_never_renders_the_first_calls_data(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    api_key: str,
) -> None:
    template_id = _template(hook, make_pdf("incident.pdf"))
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=[{"placeholder": "On call", "email": "oncall@example.test", "name": "Olive"}],
        prefill_fields={"error": "{{ exception }}", "run": "{{ run_id }}"},
        title="Incident: {{ exception }}",
        external_id="incident-{{ run_id }}",
    )
    hostile = "load failed near {{ conn.docsign_default.password }} and {{ 6 * 7 }}"
    notifier(_context("run-1", hostile, api_key))
    notifier(_context("run-2", "second failure", api_key))
    notifier(_context("run-2", "second failure", api_key))  # the same run again: no third envelope

    uses = [r for r in sandbox.requests() if r["path"] == "/envelope/use"]
    assert len(uses) == 2
    first = hook.get_envelope(hook.find_envelopes_by_external_id("incident-run-1")[0].id)
    second = hook.get_envelope(hook.find_envelopes_by_external_id("incident-run-2")[0].id)
    assert first.title == f"Incident: {hostile}"  # the exception's text, kept as data
    assert second.title == "Incident: second failure"  # rendered from the template, not run 1's output
    texts = {f.custom_text for f in second.fields if f.type == "TEXT"}
    assert texts == {"second failure", "run-2"}
    for envelope in (first, second):
        shown = [envelope.title, *(f.custom_text or "" for f in envelope.fields)]
        assert not any(api_key in text for text in shown)
        assert not any("42" in text for text in shown)  # {{ 6 * 7 }} stayed data
    assert api_key not in repr(first) + repr(second)
    assert notifier.title == "Incident: second failure"  # the last call's rendering; the template is kept
