"""Executable docs: every command block of README.md and docs/ runs, and every output shown is the
output it gives.

The documents are read by Sybil (``conftest.py`` at the root). Three kinds of fenced block run:

- ``console``: ``$ command`` lines (a line ending in ``\\`` goes on on the next one), each followed
  by the output it must print. Output is compared as doctest compares it, with ``...`` standing
  for any text and runs of white space alike (a table's column widths may differ), so a line that
  changes from run to run (a timestamp, a path) shows ``...`` where it changes. A command shown
  without output must still succeed.
- ``sh``: every line a command that must succeed, run in order; what it prints is not compared.
- ``python``: run in the document's namespace.
- ``toml``: read as TOML (a config shown must at least parse).

A ``python`` or ``toml`` block right after ``<!-- file: NAME -->`` shows a file a command of the
document wrote: it must be that file, to the character, and is not run itself.

Each document runs in a scratch folder of its own (``DocShell``), holding a copy of ``config/``
and links to the rest of the checkout, so a command writes no results folder, config or journal
into the checkout; ``.venv/bin/bot`` is the checkout's. A command that ends in `` &`` runs in the
background until the document ends (then it gets SIGINT, as Ctrl-C); the next command waits until
it has printed its first line (a server's banner says it is listening) or ended. The commands of
a document share one environment, as in one shell: what one exports or sources, the next ones see. A block that cannot run in a test (the test suite itself, an
hour-long soak) is preceded by ``<!-- skip: next "why" -->``, and the reason is required.
"""

from __future__ import annotations

import difflib
import doctest
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from sybil import Example

REPO = Path(__file__).resolve().parent.parent
LINKED = ("bot", "strategies", "data", "docs", "bench", "tests", "deploy", ".venv", "README.md", "pyproject.toml",
          "Makefile", "setup.py")
COPIED = ("config",)
COMMAND_TIMEOUT_S = 240.0  # the longest a documented command may take here
READY_TIMEOUT_S = 60.0  # the longest a background command may take to print its first line
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_CONTINUED = re.compile(r"\\\s*$")
_BACKGROUND = re.compile(r"^(.*[^&])&\s*(#[^\n]*)?$", re.S)  # `cmd &` or `cmd &  # why`, not `a && b`


class DocShell:
    """A scratch copy of the checkout's layout where one document's commands run, in order, with
    the background processes they started stopped when the document ends."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="docs-"))
        self.root = self.base / "checkout"  # ../shared beside it, as beside the checkout
        self.root.mkdir()
        shared = Path(os.environ.get("BOT_SHARED_DIR", REPO.parent / "shared"))
        if shared.exists():
            (self.base / "shared").symlink_to(shared.resolve())
        for name in LINKED:
            if (REPO / name).exists():
                (self.root / name).symlink_to(REPO / name)
        for name in COPIED:
            shutil.copytree(REPO / name, self.root / name)
        self.background: list[subprocess.Popen] = []
        self._logs: list[Path] = []
        self.env = dict(os.environ)
        self.env.update({"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", "PYTHONUNBUFFERED": "1"})
        self.env.pop("FORCE_COLOR", None)

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT_S) -> str:
        """Run ``command`` in bash here; its output (stdout and stderr as they came). A failure raises
        with it: a command shown failing is written ``cmd; echo "exit $?"``, so its code is shown too."""
        background = _BACKGROUND.match(command)
        if background:
            self.start(background.group(1))
            return ""
        # as in one shell session: what a command exports or sources is there for the next ones
        env_out = self.base / "env.after"
        script = f"{command}\n__rc=$?; env -0 > {shlex.quote(str(env_out))}; exit $__rc"
        proc = subprocess.run(["bash", "-c", script], cwd=self.root, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            logs = "".join(f"\n--- background `{p.args[-1]}`:\n{p_log.read_text()[-2000:]}"
                           for p, p_log in zip(self.background, self._logs))
            raise AssertionError(f"`{command}` exited {proc.returncode}:\n{proc.stdout}{logs}")
        if env_out.exists():
            pairs = (item.split("=", 1) for item in env_out.read_text().split("\0") if "=" in item)
            self.env = {k: v for k, v in pairs if k not in ("_", "SHLVL", "PWD", "OLDPWD", "__rc")}
        return proc.stdout

    def start(self, command: str) -> None:
        """Start ``command`` in the background; return once it has printed a line, or failed."""
        path = self.root / f"background-{len(self.background)}.log"
        with open(path, "w") as log:
            proc = subprocess.Popen(["bash", "-c", command], cwd=self.root, env=self.env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.background.append(proc)
        self._logs.append(path)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while "\n" not in path.read_text():
            if proc.poll() is not None:
                raise AssertionError(f"`{command}` ended ({proc.returncode}) before it was ready:\n{path.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"`{command}` printed nothing in {READY_TIMEOUT_S:g} s")
            time.sleep(0.05)

    def close(self) -> None:
        for proc in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        for proc in self.background:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(self.base, ignore_errors=True)


def shell_of(example: Example) -> DocShell:
    """The document's shell, made at its first block that runs a command."""
    ns = example.namespace
    shell = ns.get("_doc_shell")
    if shell is None:
        shell = ns["_doc_shell"] = DocShell()
        os.chdir(shell.root)  # python blocks read paths as a reader standing in the checkout would
    return shell


def close_document(namespace: dict[str, Any]) -> None:
    os.chdir(REPO)
    shell = namespace.pop("_doc_shell", None)
    if shell is not None:
        shell.close()


def commands_and_outputs(source: str) -> list[tuple[str, str]]:
    """A console block's ``$`` commands, each with the output lines shown under it."""
    out: list[tuple[str, list[str]]] = []
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while _CONTINUED.search(command) and i + 1 < len(lines):
                i += 1
                command = _CONTINUED.sub("", command) + " " + lines[i].strip()
            out.append((command, []))
        elif out:
            out[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"a console block begins with a command (`$ ...`), not {line!r}")
        i += 1
    return [(c, "\n".join(o).strip("\n")) for c, o in out]


def evaluate_console(example: Example) -> str | None:
    shell = shell_of(example)
    for command, want in commands_and_outputs(example.parsed):
        got = shell.run(command)
        if want and not doctest.OutputChecker().check_output(want + "\n", got, OPTIONS):
            return f"`{command}` printed\n{got}\nwhere the document shows\n{want}\n"
    return None


def evaluate_sh(example: Example) -> str | None:
    shell = shell_of(example)
    for command in sh_commands(example.parsed):
        shell.run(command)
    return None


def sh_commands(source: str) -> list[str]:
    """A sh block's commands: its lines, a line ending in ``\\`` joined to the next, blank ones out."""
    commands: list[str] = []
    pending = ""
    for line in source.splitlines():
        if _CONTINUED.search(line):
            pending += _CONTINUED.sub("", line) + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


_FILE = re.compile(r"<!-- file: (\S+) -->\s*$")


def shown_file(example: Example) -> str | None:
    """The file name of a ``<!-- file: NAME -->`` just before the block, if there is one."""
    before = example.document.text[:example.start].rstrip("\n").rsplit("\n", 1)[-1]
    m = _FILE.match(before)
    return m.group(1) if m else None


def compare_file(example: Example, name: str) -> str | None:
    path = shell_of(example).root / name
    if not path.is_file():
        return f"the document shows {name}, which no command before it wrote"
    got = path.read_text()
    if got != example.parsed:
        diff = "".join(difflib.unified_diff(example.parsed.splitlines(True), got.splitlines(True),
                                            "shown", "written"))
        return f"{name} as shown differs from the file written:\n{diff}"
    return None


def evaluate_toml(example: Example) -> str | None:
    name = shown_file(example)
    if name is not None:
        return compare_file(example, name)
    tomllib.loads(example.parsed)
    return None


def evaluate_python(example: Example) -> str | None:
    name = shown_file(example)
    if name is not None:
        return compare_file(example, name)
    shell_of(example)
    code = compile(example.parsed, example.path, "exec", dont_inherit=True)
    exec(code, example.namespace)  # noqa: S102 - the document's own example
    return None

