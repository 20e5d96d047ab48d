"""Build of the optional compiled hot path.

``bot/core/book.py`` is plain Python; when Cython and a C compiler are at hand it is also compiled
(types from ``bot/core/book.pxd``) and the extension module shadows the source. Without either, the
package installs and runs the same source interpreted (``bot.core.book.COMPILED`` says which).
Everything else is in ``pyproject.toml``.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCES = ["bot/core/book.py"]


class OptionalBuildExt(build_ext):
    """Builds what it can: a module that fails to compile stays interpreted, with a warning."""

    def build_extensions(self) -> None:
        built = []
        for ext in self.extensions:
            try:
                self.build_extension(ext)
                built.append(ext)
            except Exception as exc:  # noqa: BLE001 - any compiler failure leaves the source module
                print(f"warning: {ext.name} stays interpreted (not compiled: {exc})")
        self.extensions[:] = built


def extensions() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    modules = [Extension(path[:-3].replace("/", "."), [path]) for path in SOURCES]
    try:
        return cythonize(modules, language_level=3, quiet=True,
                         compiler_directives={"annotation_typing": False, "embedsignature": True})
    except Exception as exc:  # noqa: BLE001 - a failed translation leaves the interpreted module
        print(f"warning: {SOURCES} stay interpreted (not translated: {exc})")
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
