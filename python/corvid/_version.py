"""The package's version: the library's, from the repository's VERSION file (its one place,
which CMake reads too). Here it is read from that file (the source tree); a build (setup.py)
writes this module over with the constant, so an installed package needs no file."""

from __future__ import annotations

import pathlib


def _from_source_tree() -> str:
    try:
        text = (pathlib.Path(__file__).resolve().parents[2] / "VERSION").read_text("utf-8")
    except OSError:
        return "0+unknown"
    return text.strip()


__version__ = _from_source_tree()
