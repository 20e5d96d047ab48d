"""Build of the optional compiled hot path (everything else is in ``pyproject.toml``).

The modules of ``bot.compiled.HOT_PATH`` are plain Python; when Cython and a C compiler are at hand
they are also compiled, each extension beside its source and shadowing it. A module that does not
compile stays interpreted, with a warning: the package installs and runs either way.
``python setup.py build_ext --inplace`` rebuilds only what changed (``make`` does this);
``BOT_NO_COMPILE=1`` builds nothing. A build that has work to do says so first (which modules, how
many at once) and prints a line as each module is done, so a first build (minutes) is never silent.
"""

import os
import runpy
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.modified import newer_group

COMPILED = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "bot", "compiled.py"))
CYTHON_DIR = os.path.join("build", "cython")


def say(line: str) -> None:
    print(line, flush=True)


class OptionalBuildExt(build_ext):
    """Builds what it can, on every core, reporting progress: a module that fails to compile stays
    interpreted."""

    def build_extensions(self) -> None:
        self.check_extensions_list(self.extensions)
        todo = [ext for ext in self.extensions if self.force or self._stale(ext)]
        workers = min(os.cpu_count() or 1, len(todo)) or 1
        if todo:
            first = " (a first build takes a few minutes)" if len(todo) == len(self.extensions) else ""
            say(f"compiling the hot path: {len(todo)} of {len(self.extensions)} module(s) with the C compiler, "
                f"{workers} at a time{first}")
        done, lock, started = [0], threading.Lock(), time.monotonic()

        def attempt(ext: Extension) -> Extension | None:
            try:
                self.build_extension(ext)
                outcome = "compiled"
            except Exception as exc:  # noqa: BLE001 - any compiler failure leaves the source module
                outcome = f"stays interpreted (not compiled: {exc})"
            with lock:
                done[0] += 1
                say(f"  [{done[0]}/{len(todo)}] {ext.name} {outcome} ({time.monotonic() - started:.0f}s)")
            return ext if outcome == "compiled" else None

        with ThreadPoolExecutor(workers) as pool:
            built = [ext for ext in pool.map(attempt, todo) if ext is not None]
        self.extensions[:] = [ext for ext in self.extensions if ext not in todo] + built

    def _stale(self, ext: Extension) -> bool:
        """True when the extension is missing or older than its C source (what ``build_extension``
        would rebuild)."""
        return newer_group(list(ext.sources) + list(ext.depends or ()), self.get_ext_fullpath(ext.name), "newer")


def untranslated(modules: list) -> list:
    """The hot-path modules whose C translation is missing or older than their Python (or ``.pxd``)."""
    stale = []
    for m in modules:
        source = COMPILED["source_path"](m)
        pxd = source[:-3] + ".pxd"
        c_file = os.path.join(CYTHON_DIR, source[:-3] + ".c")
        if newer_group([source] + ([pxd] if os.path.exists(pxd) else []), c_file, "newer"):
            stale.append(m)
    return stale


def extensions() -> list:
    if os.environ.get("BOT_NO_COMPILE"):  # e.g. an editable install before ``build_ext --inplace``
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        say("warning: Cython is not installed: the hot path stays interpreted")
        return []
    hot = list(COMPILED["HOT_PATH"])
    stale = untranslated(hot)
    if stale:
        say(f"translating the hot path to C with Cython: {len(stale)} of {len(hot)} module(s) ({', '.join(stale)})")
    modules = [Extension(m, [COMPILED["source_path"](m)]) for m in hot]
    try:
        return cythonize(modules, build_dir=CYTHON_DIR, language_level=3, quiet=True, nthreads=os.cpu_count() or 1,
                         compiler_directives={"annotation_typing": False, "embedsignature": True})
    except Exception as exc:  # noqa: BLE001 - a failed translation leaves the interpreted modules
        say(f"warning: the hot path stays interpreted (not translated: {exc})")
        return []


if __name__ == "__main__":  # also how pip's build backend runs this file
    setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
