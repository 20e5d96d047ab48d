"""The mutation-testing config names real modules and tests, and its scores count as documented."""

from __future__ import annotations

from bench.mutation import REPO, Score, Target, load_targets, mutmut_config


def test_every_target_names_an_existing_module_its_tests_and_its_own_mutants():
    targets = load_targets()
    assert {t.name for t in targets} == {"diff", "orders", "throttle", "checks", "amounts", "reconciler", "router"}
    for t in targets:
        assert (REPO / t.path).is_file() and t.tests
        assert all((REPO / test).is_file() for test in t.tests), t.tests
        assert all(name.startswith(t.dotted + ".") and why for name, why in t.equivalent.items()), t.name


def test_the_config_mutates_one_module_against_its_tests():
    text = mutmut_config(Target("bot/execution/diff.py", ("tests/unit/test_diff.py",)))
    assert "only_mutate = bot/execution/diff.py" in text and "    tests/unit/test_diff.py" in text
    assert text.startswith("[mutmut]\nsource_paths =\n    bot\n    strategies\n")


def test_a_score_counts_killed_and_timed_out_over_all_but_skipped():
    t = Target("bot/x.py", ("t.py",), {"bot.x.x_f__mutmut_3": "equivalent"})
    s = Score(t, {"bot.x.x_f__mutmut_1": "killed", "bot.x.x_f__mutmut_2": "timeout",
                  "bot.x.x_f__mutmut_3": "survived", "bot.x.x_f__mutmut_4": "no tests",
                  "bot.x.x_f__mutmut_5": "skipped"}, 1.0)
    assert (s.total, s.killed, s.percent) == (4, 2, 50.0)
    assert s.survivors == ["bot.x.x_f__mutmut_3", "bot.x.x_f__mutmut_4"]
    assert s.unexplained == ["bot.x.x_f__mutmut_4"]
