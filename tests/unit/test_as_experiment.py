"""The experiment of Avellaneda and Stoikov's section 3.3 on fewer paths: the theory's claim holds,
the symmetric benchmark quotes the inventory strategy's average spread, and the table prints."""

from __future__ import annotations

import pytest

from bench.as_experiment import PAPER, experiment, main, table


@pytest.mark.parametrize("gamma", [0.1, 0.01, 1.0])
def test_the_inventory_strategy_ends_with_markedly_less_spread_of_inventory_and_profit(gamma: float):
    r = experiment(gamma, paths=250, seed=11)
    inv, sym = r["inventory"], r["symmetric"]
    assert inv.q_std < 0.75 * sym.q_std
    assert inv.profit_std < 0.75 * sym.profit_std
    assert sym.average_spread == pytest.approx(inv.average_spread, rel=1e-9)  # the same average spread


def test_the_figures_are_near_the_papers_where_the_setting_is_the_same():
    """gamma = 0.1: the paper's own figures for the inventory strategy (the symmetric benchmark's
    spread is defined the same way only for this gamma and 0.01; see docs/strategies)."""
    inv = experiment(0.1, paths=400, seed=3)["inventory"]
    paper = PAPER[0.1]["inventory"]
    assert inv.profit_mean == pytest.approx(paper[1], rel=0.1)
    assert inv.profit_std == pytest.approx(paper[2], rel=0.25)
    assert inv.q_std == pytest.approx(paper[4], rel=0.2)


def test_the_table_has_every_row_beside_the_papers(capsys: pytest.CaptureFixture[str]):
    assert main(["--paths", "20", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("inventory") == 3 and out.count("symmetric") == 3 and "ours | paper" in out
    assert main(["--paths", "1"]) == 2
    assert "symmetric" in table({0.5: experiment(0.5, paths=5)})  # a gamma the paper has not: ours only
