"""A new user's first week: every ordinary mistake of ``tests/mistakes.py`` (a misspelt key, a path
that is not there, a strategy that does not import, a size in old micro-units, a venue that is
down, a journal another run holds...) gets exactly one line on stderr holding the words that say
what to fix, the exit code of a user mistake (2), no traceback, no secret, and writes nothing.

Each mistake is made as a user types it, in a scratch folder of its own, through ``bot.cli.main``;
those that need a venue share one local exchange over real sockets. ``bench/mistakes.py`` runs
the same table and counts the clean answers.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.integration.exchange_fixture import exchange  # noqa: F401  (pytest fixture)
from tests.mistakes import MISTAKES, Mistake, Places, exchange_urls, run


@pytest.mark.parametrize("mistake", MISTAKES, ids=[x.id for x in MISTAKES])
def test_a_mistake_gets_one_clear_line_and_exit_2(request, tmp_path, mistake: Mistake):
    places = Places(exchange_urls(request.getfixturevalue("exchange")) if mistake.venue == "up" else None)
    answer, wrong = run(mistake, tmp_path, places)
    assert not wrong, f"{mistake.did}: {'; '.join(wrong)}\nstdout: {answer.out!r}\nstderr: {answer.err!r}"


def test_the_walk_covers_sixty_distinct_mistakes_across_the_commands():
    ids = Counter(x.id for x in MISTAKES)
    assert not [i for i, n in ids.items() if n > 1]
    assert len(MISTAKES) >= 60
    commands = {next(a for a in x.argv if not a.startswith("-") and not a.endswith(".toml")) for x in MISTAKES}
    assert {"config", "run", "backtest", "compare", "sweep", "report", "record", "new", "markets", "book", "orders",
            "keys", "order", "exchange", "demo", "positions", "cancel-all"} <= commands


def test_a_clean_answer_is_told_from_an_unclean_one(tmp_path):
    """The walk's judge itself: a case whose expected words are not in the line, or that expects
    exit 2 of a command that succeeds, is reported, so a green walk means what it says."""
    places = Places()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    wrong_words = Mistake("x", "x", ("config", "check", "nope.toml"), ("no such word",))
    _, wrong = run(wrong_words, tmp_path / "a", places)
    assert wrong == ["the line lacks ['no such word']"]
    success = Mistake("y", "y", ("new", "strategy", "fine_name"), ("fine_name",))
    _, wrong = run(success, tmp_path / "b", places)
    assert "exit 0, expected 2" in wrong and "printed on stdout" in wrong and any(w.startswith("wrote ") for w in wrong)


SAMPLED = ["config-missing", "params-micro-units", "strategy-syntax-error", "backtest-data-nowhere", "venue-down-markets",
           "malformed-key", "new-strategy-stdlib-name"]


@pytest.mark.parametrize("name", SAMPLED)
def test_a_user_typing_it_in_a_shell_gets_the_same_answer(tmp_path, name):
    """In-process answers are those of ``python -m bot.cli`` in a process of its own (a sample)."""
    mistake = next(x for x in MISTAKES if x.id == name)
    places = Places()
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    inside, wrong = run(mistake, tmp_path / "in", places)
    assert not wrong, wrong
    outside, wrong = run(mistake, tmp_path / "out", places, subprocess=True)
    assert not wrong, (wrong, outside.err)
    assert outside.code == inside.code and outside.err.replace(str(tmp_path / "out"), "") == \
        inside.err.replace(str(tmp_path / "in"), "")
