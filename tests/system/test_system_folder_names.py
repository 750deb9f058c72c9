"""System test: the folder-name rule the provider checks is the real service's (opt-in).

Each name is sent raw (``requests``, past every check of ours) to ``POST /folder/create``; the service's
verdict must be the one :func:`airflow_provider_docsign.service.names.name_issue` gives: a name it
refuses is refused with the message of that kind, a name it takes is kept trimmed. Every folder made
is inside the run's folder and deleted by the run's clean-up.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import requests

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.service.names import js_trim, name_issue

MESSAGES = {
    "link": "Name cannot contain URLs.",
    "character": "Name contains invalid characters.",
    "length": "Please enter a valid name.",
}

NAMES = [
    "https://www.yourbank.example/login",
    "Pay at HTTP://evil.example",
    "Contracts www.evil.example",
    "Legal \\u200b",  # a literal escape of an invisible character
    "👩\u200d💻 Team",  # a zero-width joiner, even inside an emoji
    "Legal \ue000",  # private use
    " a ",  # one character once trimmed
    "  Padded name  ",  # taken, kept trimmed
    "Verträge 📁 2026",  # taken
    "Invoices \\u0041",  # the escape of a visible letter: taken
]


@pytest.mark.parametrize("name", NAMES)
def test_the_service_judges_folder_names_as_the_provider_does(
    system_hook: DocsignHook, system_run: Any, name: str
) -> None:
    answer = requests.post(
        system_hook.settings.base_url.rstrip("/") + "/folder/create",
        json={"name": name, "parentId": system_run.folder_id},
        headers={"Authorization": os.environ["DOCSIGN_SYSTEM_API_KEY"]},
        timeout=60,
    )
    issue = name_issue(name)
    if answer.status_code == 200:
        system_run.folder_ids.append(answer.json()["id"])
    if issue is None:
        assert answer.status_code == 200, answer.text
        assert answer.json()["name"] == js_trim(name)
    else:
        assert answer.status_code == 400, answer.text
        messages = [i.get("message") for i in answer.json().get("issues", [])]
        assert messages == [MESSAGES[issue[0]]], (issue, answer.text)
