"""Build of the optional compiled hot path (everything else is in ``pyproject.toml``).

The modules of ``bot.compiled.HOT_PATH`` are plain Python; when Cython and a C compiler are at hand
they are also compiled, each extension beside its source and shadowing it. A module that does not
compile stays interpreted, with a warning: the package installs and runs either way.
``python setup.py build_ext --inplace`` rebuilds only what changed (``make`` does this);
``BOT_NO_COMPILE=1`` builds nothing.
"""

import os
import runpy
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILED = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "bot", "compiled.py"))


class OptionalBuildExt(build_ext):
    """Builds what it can, on every core: a module that fails to compile stays interpreted."""

    def build_extensions(self) -> None:
        self.check_extensions_list(self.extensions)

        def attempt(ext: Extension) -> Extension | None:
            try:
                self.build_extension(ext)
                return ext
            except Exception as exc:  # noqa: BLE001 - any compiler failure leaves the source module
                print(f"warning: {ext.name} stays interpreted (not compiled: {exc})")
                return None

        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            built = [ext for ext in pool.map(attempt, list(self.extensions)) if ext is not None]
        self.extensions[:] = built


def extensions() -> list:
    if os.environ.get("BOT_NO_COMPILE"):  # e.g. an editable install before ``build_ext --inplace``
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("warning: Cython is not installed: the hot path stays interpreted")
        return []
    modules = [Extension(m, [COMPILED["source_path"](m)]) for m in COMPILED["HOT_PATH"]]
    try:
        return cythonize(modules, build_dir="build/cython", language_level=3, quiet=True,
                         compiler_directives={"annotation_typing": False, "embedsignature": True})
    except Exception as exc:  # noqa: BLE001 - a failed translation leaves the interpreted modules
        print(f"warning: the hot path stays interpreted (not translated: {exc})")
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
