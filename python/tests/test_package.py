"""The package as built and installed: its version is the library's (the repository's
VERSION file), the wheel and sdist carry py.typed, the version and the `corvid` command, and
the tests import the installed package, not the source tree. tests/python/run_python_tests.sh
sets CORVID_DIST (scripts/python-venv's wheel and sdist) and CORVID_REQUIRE_INSTALLED."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import zipfile
from typing import Any

import pytest

import corvid
from conftest import ROOT

VERSION = (ROOT / "VERSION").read_text().strip()
INSTALLED = bool(os.environ.get("CORVID_REQUIRE_INSTALLED"))


def dist(ext: str) -> pathlib.Path:
    where = os.environ.get("CORVID_DIST")
    if not where:
        if INSTALLED:
            pytest.fail("CORVID_REQUIRE_INSTALLED is set, CORVID_DIST is not")
        pytest.skip("no CORVID_DIST (the wheel scripts/python-venv built)")
    found = sorted(pathlib.Path(where).glob(f"corvid-*{ext}"))
    assert len(found) == 1, f"{where}: {found}"
    return found[0]


def test_version_is_the_librarys() -> None:
    assert corvid.__version__ == VERSION
    if INSTALLED:
        assert importlib.metadata.version("corvid") == VERSION


def test_the_installed_package_is_imported() -> None:
    if not INSTALLED:
        pytest.skip("CORVID_REQUIRE_INSTALLED is not set")
    where = pathlib.Path(corvid.__file__).resolve()
    assert (ROOT / "python") not in where.parents, where
    assert pathlib.Path(sys.prefix).resolve() in where.parents, where


def test_wheel() -> None:
    wheel = dist(".whl")
    assert wheel.name == f"corvid-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert "corvid/py.typed" in names, "the wheel has no py.typed: mypy would not read it"
        assert {"corvid/cli.py", "corvid/_json_args.py", "corvid/_schema.py"} <= names
        info = f"corvid-{VERSION}.dist-info"
        assert f"Version: {VERSION}\n" in z.read(f"{info}/METADATA").decode()
        assert 'VERSION}"' not in z.read("corvid/_version.py").decode()
        assert f'__version__ = "{VERSION}"' in z.read("corvid/_version.py").decode()
        scripts = z.read(f"{info}/entry_points.txt").decode()
        assert "corvid = corvid.cli:main" in scripts
        assert "corvid-stubgen = corvid.stubgen:main" in scripts


def test_sdist() -> None:
    sdist = dist(".tar.gz")
    assert sdist.name == f"corvid-{VERSION}.tar.gz"
    top = f"corvid-{VERSION}"
    with tarfile.open(sdist) as t:
        names = set(t.getnames())
        assert {f"{top}/setup.py", f"{top}/pyproject.toml", f"{top}/corvid/py.typed"} <= names

        def text(name: str) -> str:
            f = t.extractfile(f"{top}/{name}")
            assert f is not None
            return f.read().decode()

        assert text("VERSION").strip() == VERSION
        assert f"Version: {VERSION}\n" in text("PKG-INFO")


@pytest.mark.skipif(importlib.util.find_spec("build") is None, reason="no `build` module")
def test_the_version_follows_the_file(tmp_path: Any) -> None:
    """A build of this source with another VERSION file: sdist, then a wheel from the sdist
    alone, both of that version (what stops the package and the library drifting apart)."""
    shutil.copytree(
        ROOT / "python",
        tmp_path / "python",
        ignore=shutil.ignore_patterns(
            "tests", "bench", "build", "dist", "*.egg-info", "__pycache__"
        ),
    )
    (tmp_path / "VERSION").write_text("9.8.7rc1\n")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path / "dist"),
         str(tmp_path / "python")],
        check=True,
        capture_output=True,
    )  # fmt: skip
    wheel = tmp_path / "dist" / "corvid-9.8.7rc1-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        assert '__version__ = "9.8.7rc1"' in z.read("corvid/_version.py").decode()
    assert (tmp_path / "dist" / "corvid-9.8.7rc1.tar.gz").exists()
    # Not a version: the build stops.
    (tmp_path / "VERSION").write_text("nine\n")
    p = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--outdir",
         str(tmp_path / "dist2"), str(tmp_path / "python")],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert p.returncode != 0 and "not a version" in p.stdout + p.stderr
