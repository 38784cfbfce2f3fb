"""The build's one hook: the package's version is the library's, read from the repository's
VERSION file (its one place; CMake reads it too). An sdist carries a copy of it next to this
file, so a wheel builds from the sdist alone; the wheel's corvid/_version.py is the constant."""

from __future__ import annotations

import pathlib
import re

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = pathlib.Path(__file__).resolve().parent


def _version() -> str:
    if (HERE / "PKG-INFO").exists():  # an unpacked sdist: the copy it carries
        path = HERE / "VERSION"
    else:  # the repository (python/ is the project): the library's file
        path = HERE.parent / "VERSION"
    try:
        text = path.read_text("utf-8").strip()
    except OSError as e:
        raise SystemExit(f"corvid: the version file is missing: {e}") from None
    if not re.fullmatch(r"\d+(\.\d+)*([abc]|rc)?\d*(\.post\d+)?(\.dev\d+)?", text):
        raise SystemExit(f"corvid: {path} holds {text!r}, not a version")
    return text


VERSION = _version()


class Sdist(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        (pathlib.Path(base_dir) / "VERSION").write_text(VERSION + "\n", "utf-8")


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        target = pathlib.Path(self.build_lib) / "corvid" / "_version.py"
        target.unlink(missing_ok=True)  # a copy of the source's, perhaps a hard link
        target.write_text(
            f'"""Written by the build (setup.py) from VERSION."""\n\n__version__ = "{VERSION}"\n',
            "utf-8",
        )


setup(version=VERSION, cmdclass={"sdist": Sdist, "build_py": BuildPy})
