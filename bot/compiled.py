"""The compiled hot path: which modules the build compiles, which of them run compiled here, and
whether a compiled module is older than its source.

The build (``setup.py``) compiles each module of ``HOT_PATH`` with Cython when a C compiler is at
hand: the extension module sits beside its source file and shadows it, running the same code
(``book.py`` also gets C types from ``book.pxd``). Without a compiler the sources run as they are.
Invariant: a compiled module is never older than its source in a checkout that tests or benches
it (``stale`` finds the ones that are; the test session refuses to start on them).

This module imports nothing from the package, so the build can read ``HOT_PATH`` before anything
is installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

# Everything a book update runs through until the signed orders are ready, in that order; then
# what a backtest adds: the throttles the router spends and the simulated venue's matching; then
# the local exchange's matching engine with its ledger and books.
HOT_PATH = (
    "bot.core.book",
    "bot.core.feed",
    "bot.engine.engine",
    "strategies.market_maker",
    "bot.risk.checks",
    "bot.execution.router",
    "bot.execution.orders",
    "bot.execution.reconciler",
    "bot.venue.orders",
    "bot.venue.throttle",
    "bot.core.clock",
    "bot.core.markets",
    "bot.core.touch",
    "bot.strategy",
    "bot.strategy_set",
    "bot.risk.gate",
    "bot.risk.state",
    "bot.risk.window",
    "bot.execution.diff",
    "bot.execution.records",
    "bot.portfolio.positions",
    "bot.engine.signing",
    "bot.engine.assembly",
    "bot.sim.venue",
    "bot.sim.resting",
    "bot.sim.depth",
    "bot.backtest.timeline",
    "bot.sim.accounts",
    "bot.sim.book",
    "bot.sim.matching",
)

_EXTENSION_SUFFIXES = (".so", ".pyd")


def source_path(module: str) -> str:
    """The source file of ``module`` relative to the repository root (``bot/core/book.py``)."""
    return module.replace(".", "/") + ".py"


def runs_compiled(module: str) -> bool:
    """True when importing ``module`` loads its compiled extension rather than its source."""
    spec = importlib.util.find_spec(module)
    return spec is not None and str(spec.origin).endswith(_EXTENSION_SUFFIXES)


def interpreted(module: str) -> ModuleType:
    """``module`` run from its source even where its compiled extension shadows it, as a module of
    its own (``<package>._<name>_interpreted``): what tests compare the compiled build with."""
    package, _, name = module.rpartition(".")
    spec = importlib.util.find_spec(module)
    source = Path(str(spec.origin)).with_name(name + ".py")
    loaded = importlib.util.spec_from_file_location(f"{package}._{name}_interpreted", source)
    out = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(out)
    return out


def summary() -> str:
    """One line: how many hot-path modules run compiled, naming any that do not."""
    interpreted = [m for m in HOT_PATH if not runs_compiled(m)]
    if not interpreted:
        return f"hot path compiled ({len(HOT_PATH)} modules)"
    if len(interpreted) == len(HOT_PATH):
        return "hot path interpreted (no compiled module was built)"
    return f"hot path compiled except {', '.join(interpreted)}"


def stale() -> list[str]:
    """Compiled hot-path modules older than their source (``.py``) or C types (``.pxd``)."""
    out = []
    for module in HOT_PATH:
        spec = importlib.util.find_spec(module)
        if spec is not None and str(spec.origin).endswith(_EXTENSION_SUFFIXES):
            if older_than_source(Path(spec.origin)):
                out.append(module)
    return out


def older_than_source(built: Path) -> bool:
    """True when the ``.py`` or ``.pxd`` beside the extension file ``built`` is newer than it."""
    stem = built.name.split(".", 1)[0]
    when = built.stat().st_mtime
    sources = (built.with_name(stem + ".py"), built.with_name(stem + ".pxd"))
    return any(s.exists() and s.stat().st_mtime > when for s in sources)
