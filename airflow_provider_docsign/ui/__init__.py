"""The Contracts pages in the Airflow 3 UI: a provider plugin (FastAPI app and external views).

:mod:`.plugin` is what ``get_provider_info()`` registers (Airflow 3.1 and later only); :mod:`.app` serves
the pages and their JSON under ``/docsign``; :mod:`.reader` shapes what the service says, :mod:`.lookup`
what Airflow's metadata database says (which task created or waits on an envelope, which campaigns
ran), :mod:`.campaigns` the Campaigns tab, :mod:`.cache` keeps one read for every viewer.

May import: everything below the Airflow face (``service``, ``hooks``, ``bulk``, ``_compat`` ...) and the
face's sensors for reading a campaign's result table. Nothing imports it but Airflow's plugin manager.
"""
