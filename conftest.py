"""The documents are tests: every command block of README.md and docs/ runs (``tests/docs_check.py``)."""

import importlib.util

from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

from tests.docs_check import close_document, evaluate_console, evaluate_python, evaluate_sh, evaluate_toml

pytest_collect_file = Sybil(
    parsers=[
        CodeBlockParser("console", evaluate_console),
        CodeBlockParser("sh", evaluate_sh),
        CodeBlockParser("python", evaluate_python),
        CodeBlockParser("toml", evaluate_toml),
        SkipParser(),
    ],
    patterns=["README.md", "docs/*.md", "docs/**/*.md"],
    teardown=close_document,
    name="docs",
).pytest()


if importlib.util.find_spec("xdist") is not None:  # the hook exists only with pytest-xdist installed
    def pytest_xdist_make_scheduler(config, log):
        """With several test workers (``make test``: pytest-xdist), a file's tests run in one worker,
        in order, and so do all the documents: their commands start the local exchange and the demo on
        the ports a reader's would (8080-8082, 9464), one at a time."""
        from xdist.scheduler import LoadFileScheduling

        class FilesAndDocuments(LoadFileScheduling):
            def _split_scope(self, nodeid: str) -> str:
                path = nodeid.split("::", 1)[0]
                return "docs" if path.endswith(".md") else path

        return FilesAndDocuments(config, log)
