"""The compiled hot path: the list the build reads, and the staleness check the test session uses."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

from bot import compiled

REPO = Path(__file__).resolve().parents[2]


def test_every_hot_path_module_is_a_source_file_of_the_package() -> None:
    for module in compiled.HOT_PATH:
        assert (REPO / compiled.source_path(module)).is_file(), module
        assert importlib.util.find_spec(module) is not None


def test_summary_names_what_runs_interpreted(monkeypatch) -> None:
    monkeypatch.setattr(compiled, "HOT_PATH", ("pkg.a", "pkg.b", "pkg.c"))
    monkeypatch.setattr(compiled, "runs_compiled", lambda m: True)
    assert compiled.summary() == "hot path compiled (3 modules)"
    monkeypatch.setattr(compiled, "runs_compiled", lambda m: m != "pkg.b")
    assert compiled.summary() == "hot path compiled except pkg.b"
    monkeypatch.setattr(compiled, "runs_compiled", lambda m: m == "pkg.b")
    assert compiled.summary() == "hot path compiled except pkg.a, pkg.c"
    monkeypatch.setattr(compiled, "runs_compiled", lambda m: False)
    assert compiled.summary() == "hot path interpreted (no compiled module was built)"


def test_a_module_runs_compiled_only_when_its_extension_sits_beside_its_source(tmp_path, monkeypatch) -> None:
    package = tmp_path / "hotpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "plain.py").write_text("X = 1\n")
    (package / "fast.py").write_text("X = 1\n")
    (package / ("fast" + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(b"")  # never loaded
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert compiled.runs_compiled("hotpkg.fast")
        assert not compiled.runs_compiled("hotpkg.plain")
        assert not compiled.runs_compiled("hotpkg.missing")
    finally:
        sys.modules.pop("hotpkg", None)


def test_a_source_newer_than_its_compiled_module_is_stale(tmp_path) -> None:
    src = tmp_path / "hot.py"
    ext = tmp_path / "hot.cpython-311-x86_64-linux-gnu.so"
    src.write_text("X = 1\n")
    ext.write_bytes(b"")
    os.utime(src, (1_000, 1_000))
    os.utime(ext, (2_000, 2_000))
    assert not compiled.older_than_source(ext)
    os.utime(src, (3_000, 3_000))  # the source was edited after the build
    assert compiled.older_than_source(ext)
    os.utime(src, (1_000, 1_000))
    (tmp_path / "hot.pxd").write_text("")
    os.utime(tmp_path / "hot.pxd", (3_000, 3_000))  # so were its C types
    assert compiled.older_than_source(ext)

