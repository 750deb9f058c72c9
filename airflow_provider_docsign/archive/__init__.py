"""The archive: signed PDFs to disk or object storage with a manifest, and the auditor that re-checks it.

Safe names and the manifest (:mod:`.naming`), the store with atomic writes that keep every path
inside the destination (:mod:`.store`), one envelope's archive (:mod:`.archiver`) and a campaign's
(:mod:`.batch`), signature checks and evidence of an archive (:mod:`.signatures`, :mod:`.evidence`),
the auditor behind ``docsign verify`` (:mod:`.auditor`, with :mod:`.audit_pdfs`,
:mod:`.audit_evidence` and :mod:`.audit_folders`), and the clean-up's "safely archived" check
(:mod:`.retention`).

May import: :mod:`..service`, :mod:`..evidence`, the hook, the shared top-level modules. Never the
Airflow face (operators, sensors, triggers, notifications, cli).
"""

from airflow_provider_docsign._moved import forward

# 0.2's ``airflow_provider_docsign.archive`` module is :mod:`.naming` now.
__getattr__ = forward(__name__, "naming")
