"""Contract data as tables: rows and the PII policy, the partition store, OpenLineage facets.

:mod:`.rows` builds the versioned tables' rows from envelopes, :mod:`.store` writes a partition
atomically (JSON Lines, CSV or Parquet), :mod:`.lineage` describes it to OpenLineage (a soft
dependency, imported only when the provider is there).

May import: :mod:`..service`, :mod:`..archive` (its store's fsync), ``assets``, the hook and the shared
top-level modules. Never the Airflow face.
"""

from airflow_provider_docsign._moved import forward

# 0.2's ``airflow_provider_docsign.export`` module is :mod:`.rows` now.
__getattr__ = forward(__name__, "rows")
