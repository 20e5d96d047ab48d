"""The executable-docs checker (``tests/docs_check.py``): how it reads blocks, and the rules every
document keeps so that nothing shown escapes it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs_check import DocShell, commands_and_outputs, sh_commands

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.M | re.S)
RUN = {"console", "sh", "python"}
DATA = {"toml", "json", "jsonl", ""}  # shown, not run: a config, a record, a diagram or a listing


def blocks(path: Path) -> list[tuple[str, str, str]]:
    """(language, body, the text just before the block) of each fenced block of ``path``."""
    text = path.read_text()
    return [(m.group(1).strip(), m.group(2), text[:m.start()].rstrip().rsplit("\n", 1)[-1]) for m in FENCE.finditer(text)]


def test_a_console_block_pairs_each_command_with_the_output_under_it():
    source = "$ echo one \\\n    two\none two\n$ true\n$ printf 'a\\nb\\n'\na\n...\n"
    assert commands_and_outputs(source) == [("echo one  two", "one two"), ("true", ""),
                                            ("printf 'a\\nb\\n'", "a\n...")]
    with pytest.raises(ValueError, match="begins with a command"):
        commands_and_outputs("output before any command\n$ true\n")


def test_a_sh_block_is_its_commands_without_comments_and_blank_lines():
    assert sh_commands("# a comment\n.venv/bin/bot a \\\n  --b\n\ncp x y   # why\n") == [".venv/bin/bot a    --b",
                                                                                      "cp x y   # why"]


def test_the_shell_runs_in_a_scratch_copy_and_names_a_failure(tmp_path):
    shell = DocShell()
    try:
        assert shell.run("ls config/bot.example.toml && touch config/new.toml") == "config/bot.example.toml\n"
        assert not (REPO / "config" / "new.toml").exists()  # the checkout's config is untouched
        assert shell.run('echo out; echo err >&2; false; echo "exit $?"') == "out\nerr\nexit 1\n"
        with pytest.raises(AssertionError, match="exited 3"):
            shell.run("exit 3")
    finally:
        shell.close()
    assert not shell.root.exists() and not shell.base.exists()


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_block_that_shows_a_command_runs_and_every_skip_says_why(path):
    for language, body, before in blocks(path):
        assert language in RUN | DATA, f"{path.name}: a ```{language} block: runs as console, sh or python, or is data"
        if language in DATA:
            shown = [line for line in body.splitlines() if line.startswith("$ ")]
            assert not shown, f"{path.name}: a command shown in a block that does not run: {shown[0]} (use ```console)"
        if language in RUN and before.startswith("<!-- skip"):
            assert re.fullmatch(r'<!-- skip: next "[^"]{20,}" -->', before), f"{path.name}: a skip without its reason: {before}"


def test_a_background_command_is_waited_for_until_its_first_line_and_stopped_at_the_end():
    shell = DocShell()
    try:
        shell.run("(sleep 0.3; echo ready; exec sleep 60) &   # a comment & more")
        assert (shell.root / "background-0.log").read_text() == "ready\n"
        proc = shell.background[0]
        assert proc.poll() is None
        with pytest.raises(AssertionError, match="ended"):
            shell.run("(echo -n; exit 4) &")
    finally:
        shell.close()
    assert proc.poll() is not None


def test_what_a_command_exports_or_sources_the_next_ones_see():
    shell = DocShell()
    try:
        shell.run("printf 'export DOC_A=1\\n' > a.env")
        shell.run(". ./a.env && export DOC_B=two")
        assert shell.run('echo "$DOC_A $DOC_B"') == "1 two\n"
    finally:
        shell.close()
