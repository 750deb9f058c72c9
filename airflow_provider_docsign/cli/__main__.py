"""``python -m airflow_provider_docsign.cli`` is ``docsign``."""

import sys

from airflow_provider_docsign.cli import main

sys.exit(main())
