"""The pre-flight of ``make test`` and ``make stack``: where the system binaries are; installs the rest.

Standard library only: ``python3 scripts/stack.py preflight`` runs it with the system Python, before
any venv exists. It finds Debian's PostgreSQL, ``redis-server`` and Chromium; :func:`ensure` installs
the missing ones with one ``apt-get install`` when it can, else names them with the install command.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Overrides, for machines with the binaries elsewhere and for the pre-flight's own tests:
# where Debian's PostgreSQL versions live, and the browser to drive (the pre-flight exports it).
POSTGRESQL_ROOT_ENV = "DOCSIGN_POSTGRESQL_ROOT"
CHROMIUM_ENV = "DOCSIGN_CHROMIUM"
APT_LOG = Path(tempfile.gettempdir()) / "docsign-apt-get.log"


def apt_hint(packages: list[str]) -> str:
    """The command that installs ``packages`` from Debian."""
    return f"sudo apt-get update && sudo apt-get install -y {' '.join(packages)}"


APT_HINT = apt_hint(["postgresql", "redis-server"])


class StackError(RuntimeError):
    """A prerequisite is missing or a component did not start."""


@dataclass(frozen=True)
class Prerequisites:
    """Where the system binaries the stack (and its browser test) use were found."""

    bindir: Path
    redis: str
    chromium: str | None = None

    def exports(self) -> str:
        """Shell ``export`` lines for ``make test``: the browser's path comes from here."""
        lines = [f"export {POSTGRESQL_ROOT_ENV}={shlex.quote(str(self.bindir.parent.parent))}"]
        if self.chromium:
            lines.append(f"export {CHROMIUM_ENV}={shlex.quote(self.chromium)}")
        return "\n".join(lines)


def _find_postgres_bindir() -> Path | None:
    root = os.environ.get(POSTGRESQL_ROOT_ENV) or "/usr/lib/postgresql"
    found = [Path(p) for p in glob.glob(os.path.join(root, "*", "bin", "initdb"))]
    versions = sorted(
        (p for p in found if p.parent.parent.name.isdigit()), key=lambda p: int(p.parent.parent.name)
    )
    if versions:
        return versions[-1].parent
    if os.environ.get(POSTGRESQL_ROOT_ENV) is None:
        on_path = shutil.which("initdb")
        if on_path:
            return Path(on_path).parent
    return None


def _find_chromium() -> str | None:
    configured = os.environ.get(CHROMIUM_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def missing_packages(browser: bool = False) -> list[str]:
    """The Debian packages of the prerequisites that are not installed (Chromium only if ``browser``)."""
    missing = []
    if _find_postgres_bindir() is None:
        missing.append("postgresql")
    if shutil.which("redis-server") is None:
        missing.append("redis-server")
    if browser and _find_chromium() is None:
        missing.append("chromium")
    return missing


def _names(missing: list[str]) -> str:
    return " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)


def _not_installed(missing: list[str]) -> str:
    verb = "is" if len(missing) == 1 else "are"
    return f"{_names(missing)} {verb} not installed. Install with: {apt_hint(missing)}"


def postgres_bindir() -> Path:
    """The directory of Debian's ``initdb``/``postgres`` (newest version), or a clear error."""
    found = _find_postgres_bindir()
    if found is None:
        raise StackError(_not_installed(["postgresql"]))
    return found


def redis_server() -> str:
    """The ``redis-server`` binary, or a clear error."""
    found = shutil.which("redis-server")
    if not found:
        raise StackError(_not_installed(["redis-server"]))
    return found


def chromium() -> str:
    """The Chromium binary the browser test drives (``$DOCSIGN_CHROMIUM`` or ``chromium`` on PATH)."""
    found = _find_chromium()
    if not found:
        configured = os.environ.get(CHROMIUM_ENV)
        if configured:
            raise StackError(f"{CHROMIUM_ENV}={configured} is not an executable file")
        raise StackError(_not_installed(["chromium"]))
    return found


def preflight(browser: bool = False) -> Prerequisites:
    """Check every system prerequisite before anything starts; name every missing one in one message.

    :param browser: Also check for Chromium (the browser test of ``make test``; ``make stack`` does
        not need it).
    """
    missing = missing_packages(browser)
    if missing:
        raise StackError(_not_installed(missing))
    return Prerequisites(postgres_bindir(), redis_server(), chromium() if browser else None)


def _installer() -> list[str] | None:
    """The prefix that runs apt-get as root: [] as root, ``sudo -n`` with passwordless sudo, else None."""
    if os.geteuid() == 0:
        return []
    sudo = shutil.which("sudo")
    if sudo is None:
        return None
    try:
        ok = subprocess.run([sudo, "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [sudo, "-n"] if ok else None


def ensure(browser: bool = True, install: bool = True, what: str = "make test") -> Prerequisites:
    """The pre-flight of ``make test`` and ``make stack``: find the prerequisites, install what is missing.

    As root or with passwordless sudo the missing Debian packages are installed with one
    ``apt-get install`` (after ``apt-get update``), saying so in one line. Otherwise, within seconds,
    :class:`StackError` names exactly what is missing and the command that installs it: for
    ``make test`` also ``make test-core`` (every test but the ``distributed`` group) as the offline
    alternative; for any other target (``make stack``) in one line.
    apt-get's output goes to :data:`APT_LOG`.

    :param what: The target that asks (``"make test"``, ``"make stack"``), named in every line.
    """
    missing = missing_packages(browser)
    if not missing:
        return preflight(browser)
    prefix = _installer() if install else None
    tests = what == "make test"
    if prefix is None and tests:
        raise StackError(
            f"{what}: the distributed tests need {_names(missing)} (Debian packages), not installed here.\n"
            f"  Install: {apt_hint(missing)}\n"
            "  Or run every other test without them: make test-core"
        )
    if prefix is None:
        raise StackError(
            f"{what}: needs {_names(missing)} (Debian packages), not installed here, and cannot install them "
            f"without root or passwordless sudo; install them with: {apt_hint(missing)}"
        )
    print(
        f"[{what}] installing {' '.join(missing)} from Debian with apt-get, "
        f"{'for the distributed tests' if tests else 'for the stack'} (log: {APT_LOG})",
        file=sys.stderr,
        flush=True,
    )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with open(APT_LOG, "wb") as log:
        for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *missing]):
            done = subprocess.run([*prefix, *cmd], env=env, stdout=log, stderr=subprocess.STDOUT)
            if done.returncode != 0:
                tail = APT_LOG.read_text(errors="replace")[-2000:]
                raise StackError(f"{what}: {' '.join(cmd)} failed (exit {done.returncode}):\n{tail}")
    return preflight(browser)
