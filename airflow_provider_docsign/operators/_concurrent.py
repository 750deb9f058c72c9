"""Two runs that create the same named thing at the same time end with one: the oldest.

A folder or a template is found by its name before it is created, so re-runs reuse it; but two runs at
the same time (a backfill, two DAGs sharing a setup task) can both find nothing and both create one.
After its create, each run lists again and takes the oldest (by the service's ``createdAt``, then id,
so every run picks the same one); the run whose own is not the oldest deletes it, since it was made a
moment ago and no run returns it. Used by ``DocsignCreateFolderOperator`` and
``DocsignCreateTemplateOperator``.

What remains: a run that lists again before the other run's create has landed keeps its own, and the
other run then deletes its copy; so the window is only the other run's own create, and no run ever
deletes what it did not make.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow_provider_docsign.exceptions import DocsignError

__all__ = ["keep_the_oldest"]


def keep_the_oldest(
    made: str,
    *,
    oldest: Callable[[], str | None],
    delete: Callable[[str], None],
    log: Any,
    what: str,
    where: str,
) -> str:
    """The id every run returns: the oldest of its kind, this run's ``made`` deleted when it is not it.

    :param made: The id this run just created.
    :param oldest: Lists again and returns the oldest matching id (None when none is listed).
    :param delete: Deletes an id (called only with ``made``).
    :param log: The task's logger.
    :param what: What it is, for the log (``folder 'Legal'``).
    :param where: Where it is, for the log (``under the root``).
    """
    try:
        first = oldest()
    except DocsignError as err:
        log.warning("Could not list again after creating %s (%s); using %s", what, err, made)
        return made
    if first is None or first == made:
        return made
    log.warning(
        "Another run created %s %s at the same time (%s): using it, and deleting %s, the one this run made",
        what,
        where,
        first,
        made,
    )
    try:
        delete(made)
    except DocsignError as err:
        log.warning("Could not delete %s (%s); it is unused and can be deleted", made, err)
    return first
