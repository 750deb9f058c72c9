"""Bulk campaigns: the plan (rows and their checks), each row's state and the checkpoint, their store.

:mod:`.plan` reads and checks a campaign's rows, :mod:`.state` keeps each row's progress and the
checkpoint's bytes, :mod:`.store` reads and writes the result table and the checkpoint.

May import: :mod:`..service`, :mod:`..archive` (its store), :mod:`..export` (its columns), the hook and
the shared top-level modules. Never the Airflow face.
"""

from airflow_provider_docsign._moved import forward

# 0.2's ``airflow_provider_docsign.bulk`` module is :mod:`.plan` now.
__getattr__ = forward(__name__, "plan")
