"""What the service accepts and answers: its rules and shapes, as pure code.

Records parsed from the service's JSON (:mod:`.models`), creation payloads checked against the local
PDFs (:mod:`.payloads`), the one outgoing check every request passes where it leaves the hook
(:mod:`.outgoing`, with the limits generated from the service's schema in :mod:`._rules`, the text
policy of :mod:`.text_policy` and the link rules of :mod:`.link_safety`, on Unicode properties
generated in :mod:`._unicode`), template
checks, corrections, attachments, link expiry ("awaits a signature"), webhook events and webhook URL
rules, and the web app's envelope links.

May import: the package's shared top-level modules (``exceptions``, ``_text``, ``_sources``) and each
other. Never Airflow, ``_compat``, an HTTP client, the hook or anything above it: the import-graph
test (``tests/unit/test_import_graph.py``) fails on one. A new rule of the service goes here, once.
"""
