"""Sphinx configuration of the API reference for strategy authors (``make docs``; checked by
``tests/unit/test_api_reference.py`` with warnings as errors)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

project = "pmbot"
extensions = ["sphinx.ext.autodoc"]
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures' annotations name internal types; the docstrings say what a value is
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
default_role = "literal"
html_theme = "alabaster"
exclude_patterns = ["_build"]
nitpicky = False
