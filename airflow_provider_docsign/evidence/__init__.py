"""Evidence that a signed PDF is what was signed: signatures, RFC 3161 timestamps, LTV, retention.

PDF signature checks (:mod:`.signatures`, pyHanko; the report in :mod:`.signature_report`, the trust
policy and certificate checks in :mod:`.certificate_trust`), timestamp tokens and their verification
(:mod:`.timestamps`), the TSA client's settings and checks (:mod:`.tsa_client`: the one request goes
through a transport the hook gives it), long-term validation copies (:mod:`.ltv`) and S3 Object Lock
retention rules (:mod:`.object_lock`).

May import: the shared top-level modules and each other. Never Airflow, ``_compat``, an HTTP client or
the hook (the import-graph test checks it); the network is reached only through what a caller passes
in (a TSA transport, a file object, pyHanko's own revocation fetchers when asked for).
"""
