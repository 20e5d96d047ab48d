"""Shared test fixtures: the async backend and the venue's reference data beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BOT_SHARED_DIR", REPO.parent / "shared"))


def pytest_sessionstart(session: pytest.Session) -> None:
    """A compiled module older than its source would test yesterday's code: refuse to start."""
    from bot.compiled import stale

    old = stale()
    if old:
        pytest.exit(f"compiled modules older than their source: {', '.join(old)}; rebuild them with "
                    "`make test` (or `.venv/bin/python setup.py build_ext --inplace`)", returncode=2)


@pytest.fixture(autouse=True)
def _logging_left_as_found():
    """A test that configures logging for the process (an in-process ``bot`` command logs to the
    test's captured stderr, closed once the test ends) leaves it as it found it."""
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"reference data not found at {SHARED} (set BOT_SHARED_DIR)")
    return SHARED


@pytest.fixture(scope="session")
def data_dir(shared_dir: Path) -> Path:
    return shared_dir / "data"


@pytest.fixture(scope="session")
def signing_vectors(shared_dir: Path) -> dict:
    import json

    return json.loads((shared_dir / "vectors" / "order_signing.json").read_text())
