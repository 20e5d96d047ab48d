"""The documents are tests: every command block of README.md and docs/ runs (``tests/docs_check.py``)."""

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
