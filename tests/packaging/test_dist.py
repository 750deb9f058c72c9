"""Installation the way people install providers: the built sdist and wheel (``make dist``).

Builds both with ``make dist`` (uv alone, in a tool venv of its own: no development venv), checks them
with ``twine check``, reads the wheel's metadata (supported
Pythons, extras with user-facing packages only), then installs the wheel ALONE (not the source tree)
into a fresh venv with the Airflow version of this venv, and runs ``docsign --help`` and
``airflow providers triggers`` there. About a minute with a warm uv cache.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import airflow
import pytest

from airflow_provider_docsign import __version__

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# Development tools must never be something a user's `pip install airflow-provider-docsign[...]` pulls.
DEV_TOOLS = ("pytest", "ruff", "mypy", "moto", "boto3", "s3fs", "celery", "playwright", "twine", "jsonschema")


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``make dist`` as a user runs it, into a temp folder, with a development venv that does not exist."""
    work = tmp_path_factory.mktemp("dist")
    out, tools, no_dev_venv = work / "dist", work / "build-venv", work / "no-dev-venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    make = ["make", "--no-print-directory", "dist", f"DIST_DIR={out}", f"BUILD_VENV={tools}"]
    made = _run([*make, f"VENV={no_dev_venv}", f"PYTHON={sys.executable}"], cwd=ROOT, env=env)
    # Only the build tool was installed: uv in its own venv, and nothing of the development venv.
    assert not no_dev_venv.exists(), made.stdout
    assert (tools / "bin" / "uv").exists()
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    assert sorted(made.stdout.split()[-2:]) == sorted([sdist.name, wheel.name]), made.stdout
    return {"wheel": wheel, "sdist": sdist}


def test_twine_check_passes_on_sdist_and_wheel(dist: dict[str, Path]) -> None:
    assert dist["wheel"].name == f"airflow_provider_docsign-{__version__}-py3-none-any.whl"
    assert dist["sdist"].name == f"airflow_provider_docsign-{__version__}.tar.gz"
    out = _run([str(BIN / "twine"), "check", "--strict", str(dist["wheel"]), str(dist["sdist"])]).stdout
    assert out.count("PASSED") == 2, out


def test_wheel_metadata_declares_python_range_and_user_extras_only(dist: dict[str, Path]) -> None:
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(wheel.read(name).decode())
        entry_points = wheel.read(name.replace("METADATA", "entry_points.txt")).decode()
    assert meta["Requires-Python"] == "<3.13,>=3.10"
    assert sorted(meta.get_all("Provides-Extra")) == ["metrics", "parquet", "preview", "sandbox"]
    requires = meta.get_all("Requires-Dist")
    assert not [r for r in requires if r.lower().startswith(DEV_TOOLS)], requires
    # The fast-moving PDF libraries have upper bounds.
    for name in ("pypdf", "pyhanko", "pyhanko-certvalidator"):
        assert any(re.match(rf"{name}[<>=]", r) and "<" in r for r in requires), (name, requires)
    assert "docsign = airflow_provider_docsign.cli:main" in entry_points
    assert "provider_info = airflow_provider_docsign:get_provider_info" in entry_points


def test_the_wheel_alone_installs_into_a_fresh_venv_with_airflow(
    dist: dict[str, Path], tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    _run([str(BIN / "uv"), "venv", "--quiet", "--python", sys.executable, str(venv)])
    _run(
        [
            str(BIN / "uv"),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin" / "python"),
            f"apache-airflow=={airflow.__version__}",
            str(dist["wheel"]),
        ],
        cwd=tmp_path,
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(home),
        "AIRFLOW_HOME": str(tmp_path / "airflow-home"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    # The provider comes from the wheel, not from this source tree.
    where = _run(
        [str(venv / "bin" / "python"), "-c", "import airflow_provider_docsign as p; print(p.__file__)"],
        env=env,
        cwd=tmp_path,
    ).stdout
    assert where.startswith(str(venv)), where
    helped = _run([str(venv / "bin" / "docsign"), "--help"], env=env, cwd=tmp_path).stdout
    assert "usage: docsign" in helped
    out = _run(
        [str(venv / "bin" / "airflow"), "providers", "triggers", "-o", "json"], env=env, cwd=tmp_path
    ).stdout
    (line,) = [ln for ln in out.splitlines() if ln.startswith("[")]
    ours = sorted(t["class"] for t in json.loads(line) if t["package_name"] == "airflow-provider-docsign")
    assert ours == ["airflow_provider_docsign.triggers.envelope", "airflow_provider_docsign.triggers.webhook"]
    assert not any(os.scandir(home)), "nothing may be written to HOME"
