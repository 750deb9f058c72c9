"""The OpenLineage soft dependency: the operators load nothing of OpenLineage until the listener asks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_operators_import_nothing_of_openlineage_until_the_listener_asks(tmp_path: Path) -> None:
    """The soft dependency: importing and building the operators loads no OpenLineage module.

    Airflow's own start-up may read the installed provider's metadata, so the modules loaded after
    ``import airflow`` are the baseline; our package must add none (without the provider installed
    there is then nothing to import at all: see the Airflow 2.11 venv, which does not install it).
    """
    code = textwrap.dedent(
        f"""
        import sys
        import airflow
        from airflow_provider_docsign import _compat
        before = sorted(m for m in sys.modules if "openlineage" in m)
        from airflow_provider_docsign.operators import (
            DocsignArchiveSignedDocumentsOperator, DocsignCreateEnvelopeFromTemplateOperator,
            DocsignCreateEnvelopeOperator, DocsignExportEnvelopesOperator)
        import airflow_provider_docsign.export.lineage
        DocsignCreateEnvelopeOperator(task_id="c", title="t", files=["a.pdf"], recipients=[], external_id="x")
        DocsignCreateEnvelopeFromTemplateOperator(task_id="u", template_id="envelope_t", recipients=[])
        where = {str(tmp_path)!r}
        DocsignArchiveSignedDocumentsOperator(task_id="a", envelope_id="envelope_x", destination=where)
        DocsignExportEnvelopesOperator(task_id="e", destination=where)
        after = sorted(m for m in sys.modules if "openlineage" in m)
        print("ADDED", sorted(set(after) - set(before)))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert "ADDED []" in out.stdout, out.stdout + out.stderr
