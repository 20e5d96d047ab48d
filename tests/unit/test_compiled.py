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



def test_the_build_says_what_it_compiles_and_reports_each_module(tmp_path, monkeypatch, capsys) -> None:
    """A build with work to do is never silent: a first line (how many modules, how many at once),
    then one line per module as it is done, failures included; a build with nothing to do prints
    nothing."""
    import runpy

    from setuptools import Distribution, Extension

    build = runpy.run_path(str(REPO / "setup.py"), run_name="build_under_test")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    exts = []
    for name in ("a", "b", "c"):
        (tmp_path / "pkg" / f"{name}.c").write_text("/* C */\n")
        exts.append(Extension(f"pkg.{name}", [f"pkg/{name}.c"]))
    cmd = build["OptionalBuildExt"](Distribution({"name": "pkg", "packages": ["pkg"], "ext_modules": exts}))
    cmd.inplace = 1
    cmd.ensure_finalized()

    def fake_compile(ext):  # stands in for the C compiler: writes the extension, or fails
        if ext.name == "pkg.b":
            raise RuntimeError("no compiler")
        Path(cmd.get_ext_fullpath(ext.name)).write_bytes(b"")

    monkeypatch.setattr(cmd, "build_extension", fake_compile)
    cmd.extensions = list(exts)
    cmd.build_extensions()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("compiling the hot path: 3 of 3 module(s)")
    assert sorted(line.split("]")[0].strip() for line in lines[1:]) == ["[1/3", "[2/3", "[3/3"]
    assert any("pkg.a compiled" in line for line in lines) and any("pkg.c compiled" in line for line in lines)
    assert any("pkg.b stays interpreted (not compiled: no compiler)" in line for line in lines)
    assert [e.name for e in cmd.extensions] == ["pkg.a", "pkg.c"]  # the failed one stays interpreted

    cmd.extensions = [e for e in exts if e.name != "pkg.b"]
    cmd.build_extensions()  # up to date: nothing to compile, nothing said
    assert capsys.readouterr().out == ""
