"""DocsignCreateFolderOperator fed what a careless or hostile user could give it.

Re-runs, two runs at the same time, a lost answer, names that hide text, hold a link or look like a
template, and parent ids as a careless template renders them. Counted at the sandbox: the
``POST /folder/create`` (and ``/folder/delete``) requests, and the folders of that name that exist afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests
from helpers import ctx, race_a_delayed_create
from odd_text import ODD_TEXT, TEMPLATE_DATA, jinja_ids, odd

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignCreateFolderOperator
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.names import js_trim

CREATE, DELETE = "/folder/create", "/folder/delete"


def sent(sandbox: SandboxServer, path: str) -> int:
    return sum(r["path"] == path for r in sandbox.requests())


def named(hook: DocsignHook, name: str) -> list[str]:
    """Ids of every folder (any level, any type) called ``name``."""
    return [f.id for f in hook.list_folders() if f.name == name]


def create(name: Any, try_number: int = 1, **kwargs: Any) -> str:
    result: str = DocsignCreateFolderOperator(task_id="folder", name=name, **kwargs).execute(ctx(try_number))
    return result


def unique(prefix: str = "Contracts") -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


def test_reruns_and_retries_return_the_one_folder(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer
) -> None:
    name = unique()
    first = create(name)
    assert create(name, try_number=2) == first
    assert create(f"  {name}  ") == first  # the same name, carelessly padded
    assert sent(sandbox, CREATE) == 1
    assert named(hook, name) == [first]


def test_two_runs_at_the_same_time_return_one_folder_and_leave_one(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer
) -> None:
    name = unique("Race")
    other = DocsignHook(docsign_conn)  # the other run, in another worker
    assert other.settings.api_key  # its connection is looked up here: Airflow 2.11 cannot in a thread
    # This run's create waits 3 s at the service; the other run lists (nothing yet) and creates its
    # own in that time, as two runs of a backfill do. The other run's folder is the older one.
    made: list[str] = []

    def other_run() -> None:
        if not [f for f in other.list_folders() if f.name == name]:
            made.append(other.create_folder(name).id)

    try:
        first = race_a_delayed_create(sandbox, CREATE, lambda: create(name), other_run)
    finally:
        other.close()
    assert sent(sandbox, CREATE) == 2  # both did create
    assert [first] == made  # this run returns the other run's (older) folder...
    assert named(hook, name) == made  # ...and deleted its own
    assert sent(sandbox, DELETE) == 1
    assert create(name) == first  # every later run finds it


def test_a_lost_answer_makes_no_second_folder(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer
) -> None:
    name = unique("Lost")
    sandbox.inject_fault("POST", CREATE, action="drop_after_commit")
    folder_id = create(name)
    assert sent(sandbox, CREATE) == 1
    assert named(hook, name) == [folder_id]


@pytest.mark.parametrize("name", ODD_TEXT)
def test_a_name_that_hides_text_is_refused_and_no_folder_is_made(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, name: str
) -> None:
    text = odd(name, unique("Legal"))
    with pytest.raises(AirflowFailException) as info:
        create(text)
    assert ODD_TEXT[name][1] in str(info.value), str(info.value)
    assert "nothing was sent" in str(info.value)
    assert sent(sandbox, CREATE) == 0
    assert named(hook, text) == []


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"name": "a"}, "name: must be 2-100 characters, not 'a'"),
        ({"name": "  a  "}, "name: must be 2-100 characters"),
        ({"name": "L" * 101}, "name: must be 2-100 characters"),
        ({"name": 42}, "name: must be 2-100 characters, not 42"),
        ({"name": None}, "name: must be 2-100 characters, not None"),
        ({"name": "Legal", "folder_type": "DOCUMENT\x00"}, "folder_type: must be one of"),
        ({"name": "Legal", "folder_type": "SHARED"}, "not 'SHARED'"),
        ({"name": "Legal", "parent_id": 5}, "parent_id: must be a folder id string, not int"),
        ({"name": "Legal", "parent_id": ["a"]}, "parent_id: must be a folder id string, not list"),
    ],
)
def test_malformed_arguments_are_refused_before_any_request(
    docsign_conn: str, sandbox: SandboxServer, kwargs: dict[str, Any], words: str
) -> None:
    with pytest.raises(AirflowFailException, match="nothing was sent") as info:
        create(**kwargs)
    assert words in str(info.value), str(info.value)
    assert sandbox.requests() == []


def test_a_name_that_looks_like_a_template_is_made_literally(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, api_key: str, render: Callable[..., Any]
) -> None:
    op = DocsignCreateFolderOperator(task_id="folder", name="{{ params.customer }}")
    literal = f"Acme {uuid.uuid4().hex[:6]} {TEMPLATE_DATA}"
    folder_id = op.execute(render(op, customer=literal))
    assert named(hook, literal) == [folder_id]
    assert not [f for f in hook.list_folders() if api_key in (f.name or "")]
    assert sent(sandbox, CREATE) == 1


def test_careless_parent_ids_never_make_a_folder_elsewhere(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer
) -> None:
    parent = create(unique("Parent"))
    templates = create(unique("Templates"), folder_type="TEMPLATE")
    name = unique("Child")
    sandbox.clear_requests()
    wrong = [*jinja_ids(parent).values(), templates]  # a document folder inside a template folder too
    for parent_id in wrong:
        with pytest.raises(AirflowFailException) as info:
            create(name, parent_id=parent_id)
        assert "nothing was sent" in str(info.value) or "Parent folder not found" in str(info.value)
    # What was sent was refused by the service; nothing was made, at the root or anywhere.
    assert [r["status"] for r in sandbox.requests() if r["path"] == CREATE] == [404] * sent(sandbox, CREATE)
    assert named(hook, name) == []
    child = create(name, parent_id=parent)
    assert [(f.id, f.parent_id) for f in hook.list_folders(parent_id=parent)] == [(child, parent)]


LINKS = [
    "https://www.yourbank.example/login",
    "Pay at HTTP://evil.example",
    "Contracts www.evil.example",
    "WWW.EVIL.EXAMPLE",
    "Legal \\u200b",  # a literal escape of an invisible character, as a careless template leaves it
    "👩\u200d💻 Team",  # a zero-width joiner: the service's name rule refuses every format character
]


@pytest.mark.parametrize("name", LINKS)
def test_a_name_the_service_refuses_never_reaches_it(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, name: str
) -> None:
    # Documenso refuses links and invisible characters in folder names (its shared name schema): a
    # folder named like a link would be shown in e-mails. Refused before any request, with the reason.
    with pytest.raises(AirflowFailException, match="nothing was sent") as info:
        create(name)
    assert "name: " in str(info.value)
    assert "link" in str(info.value) or "in names" in str(info.value), str(info.value)
    folder = hook.create_folder(unique("Rename me"))
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError):
        hook.update_folder(folder.id, name=name)  # a rename is held to the same rule
    assert sandbox.requests() == []
    assert named(hook, name) == []
    assert named(hook, js_trim(name)) == []


@pytest.mark.parametrize("name", LINKS)
def test_the_sandbox_refuses_such_names_as_the_service_does(
    sandbox: SandboxServer, api_key: str, name: str
) -> None:
    # The stand-in holds the real rule too (a client that skips our checks meets the service's 400).
    url = sandbox.base_url + CREATE
    answer = requests.post(url, json={"name": name}, headers={"Authorization": api_key}, timeout=30)
    assert answer.status_code == 400
    messages = [issue["message"] for issue in answer.json()["issues"]]
    assert messages in (["Name cannot contain URLs."], ["Name contains invalid characters."])
    # ...and trims the names it keeps, as the service does.
    kept = requests.post(url, json={"name": "  Padded  "}, headers={"Authorization": api_key}, timeout=30)
    assert kept.status_code == 200
    assert kept.json()["name"] == "Padded"
