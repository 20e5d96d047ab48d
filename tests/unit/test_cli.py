"""The ``bot`` command, run in-process (``main([...])``) and once as the installed script.

Network commands run against ``httpx.MockTransport`` or the local exchange started in-process.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import httpx
import pytest

from bot.cli import main
from bot.commands import market
from bot.ops.config import BotConfig
from bot.venue.auth import hmac_signature
from tests.conftest import SHARED
from tests.integration.exchange_fixture import exchange  # noqa: F401  (pytest fixture)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config" / "bot.example.toml"
KEY = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
ADDRESS = "0xFCAd0B19bB29D4674531d6f115237E16AfCE377c"
API_KEY = "00000000-1111-2222-3333-444444444444"
API_SECRET = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
PASSPHRASE = "test-passphrase-not-real"
TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
COND = "0x" + "ab" * 32


@pytest.fixture
def env(monkeypatch):
    for name, value in (("BOT_PRIVATE_KEY", KEY), ("BOT_API_KEY", API_KEY), ("BOT_API_SECRET", API_SECRET),
                        ("BOT_API_PASSPHRASE", PASSPHRASE)):
        monkeypatch.setenv(name, value)


@pytest.fixture(autouse=True)
def isolated_cwd(tmp_path, monkeypatch):
    """No config/bot.toml of the checkout leaks into a test."""
    monkeypatch.chdir(tmp_path)


def run(capsys, *argv, transport=None):
    code = main(list(argv), http_transport=transport)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in (KEY, KEY[2:], API_SECRET, PASSPHRASE):
            assert secret not in text


# -- usage, config check -------------------------------------------------------------------------


def test_usage_errors_are_one_line_exit_2(capsys):
    code, out, err = run(capsys, "book")
    assert code == 2 and out == ""
    assert_one_line_error(err, "TOKEN_ID")
    code, _, err = run(capsys, "order", "build", "--token", "1", "--side", "BUY", "--price", "abc", "--size", "1")
    assert code == 2
    assert_one_line_error(err, "argument --price: got 'abc', expected a decimal number")
    assert run(capsys, "--help")[0] == 0


def test_config_check_ok_and_errors(capsys, tmp_path):
    code, out, err = run(capsys, "config", "check", str(EXAMPLE))
    assert code == 0 and err == ""
    assert out.startswith(f"ok: {EXAMPLE}: ") and "strategies.market_maker:MarketMaker" in out
    assert len(out.splitlines()) == 1

    bad = tmp_path / "bad.toml"
    bad.write_text("[venue]\nchain_id = 5\n")
    code, out, err = run(capsys, "config", "check", str(bad))
    assert code == 2 and out == ""
    assert_one_line_error(err, "error: ", str(bad), "chain_id")

    bad.write_text("[strategy]\npath = 'strategies.market_maker:MarketMaker'\nparams = { half_spred_ticks = 1 }\n")
    code, _, err = run(capsys, "config", "check", str(bad))
    assert code == 2
    assert_one_line_error(err, "half_spred_ticks")

    code, _, err = run(capsys, "config", "check", str(tmp_path / "missing.toml"))
    assert code == 2
    assert_one_line_error(err, "cannot read")


def test_config_check_with_secrets_never_prints_them(capsys, env):
    code, out, err = run(capsys, "config", "check", str(EXAMPLE), "--secrets")
    assert code == 0
    assert "private key: set, API credentials: set" in out
    assert_no_secret(out, err)


def test_config_check_refuses_a_secret_in_the_file(capsys, tmp_path):
    f = tmp_path / "bot.toml"
    f.write_text(f"[venue]\nprivate_key = '{KEY}'\n")
    code, out, err = run(capsys, "config", "check", str(f))
    assert code == 2
    assert_one_line_error(err, "looks like a secret")
    assert_no_secret(out, err)


# -- order build ---------------------------------------------------------------------------------


def vector_orders():
    data = json.loads((SHARED / "vectors" / "order_signing.json").read_text())
    return [o for o in data["orders"] if o["inputs"]["metadata"] == "0x" + "00" * 32]


def project_body(official: str, inputs: dict) -> str:
    """The official body with this project's two edits (conditionId added, expiration only on GTD)."""
    top = json.loads(official)
    order = {}
    for k, v in top["order"].items():
        if k == "expiration" and inputs["order_type"] != "GTD":
            continue
        order[k] = v
        if k == "tokenId":
            order["conditionId"] = inputs["condition_id_for_service_variant"]
    top["order"] = order
    return json.dumps(top, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("vector", vector_orders(), ids=lambda v: v["id"])
def test_order_build_reproduces_the_signing_vectors(capsys, env, tmp_path, vector):
    i, o = vector["inputs"], vector["outputs"]
    cfg = tmp_path / "bot.toml"
    funder = f'funder = "{i["maker"]}"\n' if i["signature_type"] else ""
    cfg.write_text(f"[venue]\nchain_id = {i['chain_id']}\nsignature_type = {i['signature_type']}\n{funder}")
    argv = ["--config", str(cfg), "order", "build", "--json", "--token", i["token_id"], "--side", i["side"],
            "--price", i["price"], "--tick", i["tick_size"], "--type", i["order_type"],
            "--salt", i["salt"], "--timestamp-ms", i["timestamp_ms"],
            "--condition-id", i["condition_id_for_service_variant"], "--owner", i["owner"],
            "--neg-risk" if i["neg_risk"] else "--no-neg-risk"]
    argv += ["--amount", i["amount"]] if "amount" in i else ["--size", i["size"]]
    if i["order_type"] == "GTD":
        argv += ["--expiration", i["expiration"]]
    if i["post_only"]:
        argv.append("--post-only")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    printed = json.loads(out)
    if "amount" in i and int(o["takerAmount"]) % 100:
        # the official client signs a fifth taker decimal here, which production refuses on a market
        # order: ours floors it to 4 (17.62857 -> 17.6285 shares), so the hash and signature differ
        ours, official = json.loads(printed["body"]), json.loads(project_body(o["post_body"], i))
        assert ours["order"].pop("takerAmount") == str(int(o["takerAmount"]) // 100 * 100)
        official["order"].pop("takerAmount")
        assert ours["order"].pop("signature") != official["order"].pop("signature")
        assert ours == official and printed["order_id"] != o["typed_data_hash"]
    else:
        assert printed["order_id"] == o["typed_data_hash"]
        assert printed["body"] == project_body(o["post_body"], i)
    assert printed["url"] == "http://127.0.0.1:8080/order"
    headers = printed["headers"]
    assert headers["SERVICE_ADDRESS"] == i["eoa_address"]
    assert headers["SERVICE_PASSPHRASE"] == "***"
    expected = hmac_signature(API_SECRET, headers["SERVICE_TIMESTAMP"], "POST", "/order", printed["body"])
    assert headers["SERVICE_SIGNATURE"] == expected
    assert len(headers["SERVICE_TIMESTAMP"]) == 13  # milliseconds by default
    assert_no_secret(out, err)


def test_order_build_text_output_and_show_secrets(capsys, env):
    base = ["order", "build", "--token", TOKEN, "--side", "sell", "--price", "0.42", "--size", "100"]
    code, out, err = run(capsys, *base)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("# order id 0x") and "not sent" in lines[0]
    assert lines[1] == "POST http://127.0.0.1:8080/order"
    assert "SERVICE_PASSPHRASE: ***" in lines
    body = lines[-1]
    assert json.loads(body)["order"]["side"] == "SELL" and json.loads(body)["owner"] == API_KEY
    assert_no_secret(out, err)
    code, out, _ = run(capsys, *base, "--show-secrets")
    assert code == 0 and f"SERVICE_PASSPHRASE: {PASSPHRASE}" in out.splitlines()


def test_order_build_body_only_needs_no_api_credentials(capsys, monkeypatch):
    monkeypatch.setenv("BOT_PRIVATE_KEY", KEY)
    code, out, err = run(capsys, "order", "build", "--token", TOKEN, "--side", "BUY", "--price", "0.5",
                         "--size", "10", "--body-only", "--owner", "me")
    assert code == 0, err
    assert "SERVICE_" not in out and json.loads(out.splitlines()[-1])["owner"] == "me"


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--price", "0.555", "--size", "10"], "not a multiple of the tick"),
        (["--price", "0.5", "--size", "10", "--tick", "0.005"], "unsupported tick size"),
        (["--price", "0.5", "--amount", "10", "--type", "GTC"], "take --size"),
        (["--price", "0.5", "--amount", "10", "--post-only"], "post-only"),
        (["--price", "0.5", "--size", "10", "--type", "GTD"], "expiration"),
        (["--price", "0.5", "--size", "10", "--condition-id", "0x12"], "conditionId"),
    ],
)
def test_order_build_bad_input(capsys, env, extra, needle):
    code, out, err = run(capsys, "order", "build", "--token", TOKEN, "--side", "BUY", *extra)
    assert code == 2 and out == ""
    assert_one_line_error(err, needle)


def test_missing_secrets_name_the_env_var(capsys, monkeypatch):
    for name in ("BOT_PRIVATE_KEY", "BOT_API_KEY", "BOT_API_SECRET", "BOT_API_PASSPHRASE"):
        monkeypatch.delenv(name, raising=False)
    argv = ["order", "build", "--token", TOKEN, "--side", "BUY", "--price", "0.5", "--size", "1"]
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert_one_line_error(err, "BOT_PRIVATE_KEY")
    monkeypatch.setenv("BOT_PRIVATE_KEY", KEY)
    monkeypatch.setenv("BOT_API_KEY", API_KEY)
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert_one_line_error(err, "BOT_API_SECRET")
    code, _, err = run(capsys, "orders")
    assert code == 2
    assert_one_line_error(err, "BOT_API_SECRET")


def test_order_build_fetches_tick_and_neg_risk(capsys, env):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path == "/tick-size":
            return httpx.Response(200, json={"minimum_tick_size": 0.001})
        if request.url.path == "/neg-risk":
            return httpx.Response(200, json={"neg_risk": True})
        return httpx.Response(404, json={"error": "not found"})

    code, out, err = run(capsys, "order", "build", "--token", TOKEN, "--side", "BUY", "--price", "0.123",
                         "--size", "7.5", "--fetch", "--json", transport=httpx.MockTransport(handler))
    assert code == 0, err
    assert seen == ["/tick-size", "/neg-risk"]  # nothing is ever posted
    body = json.loads(json.loads(out)["body"])
    assert body["order"]["makerAmount"] == "922500"  # 7.5 * 0.123 on the 0.001 grid


# -- book, markets (mock venue) ------------------------------------------------------------------


BOOK = {
    "market": COND, "asset_id": TOKEN, "timestamp": "1767225600123", "hash": "abc",
    "bids": [{"price": "0.45", "size": "10"}, {"price": "0.47", "size": "5"}, {"price": "0.46", "size": "1"}],
    "asks": [{"price": "0.55", "size": "3"}, {"price": "0.50", "size": "2.5"}, {"price": "0.52", "size": "9"}],
    "min_order_size": "5", "tick_size": "0.01", "neg_risk": False, "last_trade_price": "0.48",
}


def book_transport(body=BOOK, status=200):
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/book" and request.url.params["token_id"] == TOKEN
        return httpx.Response(status, json=body)

    return httpx.MockTransport(handler)


def test_book_json_takes_best_levels_by_price(capsys):
    code, out, err = run(capsys, "book", TOKEN, "--json", "--depth", "2", transport=book_transport())
    assert code == 0, err
    view = json.loads(out)
    assert (view["best_bid"], view["best_ask"], view["mid"], view["spread"]) == ("0.47", "0.5", "0.485", "0.03")
    assert view["bids"] == [{"price": "0.47", "size": "5"}, {"price": "0.46", "size": "1"}]
    assert view["asks"] == [{"price": "0.5", "size": "2.5"}, {"price": "0.52", "size": "9"}]
    assert view["tick_size"] == "0.01" and view["neg_risk"] is False


def test_book_table(capsys):
    code, out, _ = run(capsys, "book", TOKEN, transport=book_transport())
    assert code == 0
    assert TOKEN in out and "tick 0.01" in out
    assert "bid 0.47  ask 0.5  mid 0.485  spread 0.03" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("bid ", "ask "))
            and "│" in line]
    assert [r[0] for r in rows] == ["ask", "ask", "ask", "bid", "bid", "bid"]
    assert rows[2][2] == "0.5" and rows[3][2] == "0.47"  # best levels meet at the spread


def test_one_sided_book(capsys):
    code, out, _ = run(capsys, "book", TOKEN, "--json", transport=book_transport({**BOOK, "asks": []}))
    assert code == 0
    view = json.loads(out)
    assert view["best_ask"] is None and view["mid"] is None and view["best_bid"] == "0.47"


def test_venue_error_is_one_line_exit_2(capsys):
    code, out, err = run(capsys, "book", TOKEN, transport=book_transport({"error": "No orderbook\nexists"}, 404))
    assert code == 2 and out == ""
    assert_one_line_error(err, "error: ", "404", "No orderbook exists")


def test_malformed_venue_answer_is_exit_2(capsys):
    code, _, err = run(capsys, "book", TOKEN, transport=book_transport({"bids": "nope"}))
    assert code == 2
    assert_one_line_error(err, "OrderBook")


def test_unreachable_host_names_the_url(capsys, tmp_path):
    cfg = tmp_path / "bot.toml"
    cfg.write_text('[venue]\nclob_url = "http://127.0.0.1:9"\n')
    code, _, err = run(capsys, "--config", str(cfg), "book", TOKEN)
    assert code == 2
    assert_one_line_error(err, "cannot reach http://127.0.0.1:9")


MARKET = {
    "id": "1", "question": "Will it rain?", "conditionId": COND, "slug": "rain",
    "outcomes": '["Yes", "No"]', "clobTokenIds": f'["{TOKEN}", "42"]',
    "active": True, "closed": False, "archived": False,
}


def test_markets_filters_reach_the_query_and_json(capsys):
    queries = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/neg-risk":  # the catalog listing does not say: the CLOB is asked
            assert request.url.params["token_id"] == TOKEN
            return httpx.Response(200, json={"neg_risk": True})
        assert request.url.path == "/markets"
        queries.append(dict(request.url.params))
        return httpx.Response(200, json=[MARKET])

    code, out, err = run(capsys, "markets", "--active", "--no-closed", "--tag", "weather", "--tag-id", "7",
                         "--event-slug", "ev", "--condition-id", COND, "--order", "volume", "--ascending",
                         "--limit", "5", "--offset", "10", "--creator", "site", "--json",
                         transport=httpx.MockTransport(handler))
    assert code == 0, err
    assert queries == [{"limit": "5", "offset": "10", "active": "true", "closed": "false", "tag_slug": "weather",
                        "tag_id": "7", "event_slug": "ev", "conditionId": COND, "order": "volume",
                        "ascending": "true", "creator": "site"}]
    [row] = json.loads(out)
    assert row["question"] == "Will it rain?" and row["condition_id"] == COND
    assert row["tokens"] == [{"outcome": "Yes", "token_id": TOKEN}, {"outcome": "No", "token_id": "42"}]
    assert row["active"] is True and row["closed"] is False
    assert row["neg_risk"] is True  # the CLOB's flag, as the catalog's listing carries none


def test_markets_table(capsys):
    transport = httpx.MockTransport(lambda request: httpx.Response(
        200, json={"neg_risk": False} if request.url.path == "/neg-risk" else [MARKET]))
    code, out, _ = run(capsys, "markets", transport=transport)
    assert code == 0
    assert "Will it rain?" in out and COND in out and f"Yes: {TOKEN}" in out and "active" in out


LONG_TOKEN = "113467687046380709861065659150944940576930898732281660178357962957604303351434"  # 78 digits


@pytest.mark.parametrize("width", [80, 120, 160, 200, 240, 300])
def test_markets_never_cut_an_id_at_any_terminal_width(capsys, monkeypatch, width):
    """The ids the docs say to copy are printed whole, never with "…": side by side in a table when
    the terminal is wide enough for them, else one block per market with each id on its line."""
    from rich.console import Console

    from bot.commands.session import Session

    monkeypatch.setattr(Session, "console",
                        lambda self: Console(file=sys.stdout, width=width, highlight=False, soft_wrap=False))
    market = dict(MARKET, question="Will it rain in the city on the first day of the month after next? " * 2,
                  clobTokenIds=f'["{TOKEN}", "{LONG_TOKEN}"]')
    transport = httpx.MockTransport(lambda request: httpx.Response(
        200, json={"neg_risk": False} if request.url.path == "/neg-risk" else [market, market]))
    code, out, _ = run(capsys, "markets", transport=transport)
    assert code == 0
    assert "…" not in out
    words = out.split()
    assert words.count(COND) == 2 and words.count(TOKEN) == 2 and words.count(LONG_TOKEN) == 2
    assert ("┃" in out) == (width >= 240)  # the table only where every id fits beside the rest


def test_markets_ids_only_prints_each_id_on_its_own_line(capsys):
    transport = httpx.MockTransport(lambda request: httpx.Response(
        200, json={"neg_risk": False} if request.url.path == "/neg-risk" else [MARKET]))
    code, out, _ = run(capsys, "markets", "--ids-only", transport=transport)
    assert code == 0
    assert out.splitlines() == [COND, TOKEN, "42"]


def test_positions_print_the_venues_floats_as_exact_6_decimal_amounts(capsys, monkeypatch):
    """The account-data route answers JSON floats; ``bot positions`` prints the amount each stands
    for (sizes and USDC are micro-units), not the float's binary expansion."""
    monkeypatch.setenv("BOT_PRIVATE_KEY", KEY)
    position = {"proxyWallet": "0x" + "11" * 20, "asset": TOKEN, "conditionId": COND, "size": 509.79441999999995,
                "avgPrice": 0.30000000000000004, "curPrice": 0.645, "currentValue": 328.81739999999996,
                "cashPnl": -0.1 - 0.2, "outcome": "Yes", "title": "Will it rain?"}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=[position]))
    code, out, err = run(capsys, "positions", "--user", "0x" + "11" * 20, transport=transport)
    assert code == 0, err
    words = out.split()
    assert "509.79442" in words and "0.3" in words and "328.8174" in words and "-0.3" in words
    assert "509.79441999999995" not in out and "0.30000000000000004" not in out


def test_markets_bad_limit_is_refused_before_sending(capsys):
    def handler(request):  # pragma: no cover - must not be called
        raise AssertionError("sent")

    code, _, err = run(capsys, "markets", "--limit", "101", transport=httpx.MockTransport(handler))
    assert code == 2
    assert_one_line_error(err, "limit")


# -- internal errors, delegation -----------------------------------------------------------------


def test_internal_error_is_exit_1_and_debug_shows_the_traceback(capsys, monkeypatch):
    from bot.ops.logging import register_secret

    def boom(book, depth):
        raise RuntimeError(f"bug near {PASSPHRASE}")

    register_secret(PASSPHRASE)
    monkeypatch.setattr(market, "book_view", boom)
    code, _, err = run(capsys, "book", TOKEN, transport=book_transport())
    assert code == 1
    assert_one_line_error(err, "internal error: RuntimeError")
    assert PASSPHRASE not in err
    code, _, err = run(capsys, "--debug", "book", TOKEN, transport=book_transport())
    assert code == 1 and "Traceback" in err


def test_run_and_demo_not_available(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "bot.live.run", None)
    monkeypatch.setitem(sys.modules, "bot.live.demo", None)
    code, _, err = run(capsys, "--config", str(EXAMPLE), "run")
    assert code == 2
    assert_one_line_error(err, "not available")
    code, _, err = run(capsys, "demo")
    assert code == 2
    assert_one_line_error(err, "not available")


def test_run_and_demo_delegate(capsys, monkeypatch, tmp_path):
    calls = []
    live_run = types.ModuleType("bot.live.run")
    live_run.run = lambda config, args: calls.append(("run", config, args)) or 0
    live_demo = types.ModuleType("bot.live.demo")
    live_demo.run = lambda args: calls.append(("demo", args.duration, args.seed, args.no_view)) or 3
    live_demo.add_arguments = importlib.import_module("bot.live.demo").add_arguments
    monkeypatch.setitem(sys.modules, "bot.live.run", live_run)
    monkeypatch.setitem(sys.modules, "bot.live.demo", live_demo)

    assert run(capsys, "run", "--config", str(EXAMPLE), "--duration", "5")[0] == 0
    kind, config, args = calls[-1]
    assert kind == "run" and isinstance(config, BotConfig) and args.duration == 5.0
    assert config.strategy.path == "strategies.market_maker:MarketMaker"
    assert run(capsys, "demo", "--duration", "2.5", "--seed", "4", "--no-view")[0] == 3
    assert calls[-1] == ("demo", 2.5, 4, True)
    assert run(capsys, "demo")[0] == 3 and calls[-1] == ("demo", None, None, None)  # the demo's defaults

    code, _, err = run(capsys, "run")  # no config file anywhere
    assert code == 2
    assert_one_line_error(err, "--config FILE")
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    code, _, err = run(capsys, "run", "--config", str(empty))
    assert code == 2
    assert_one_line_error(err, "[strategy] path")


def test_exchange_delegates(capsys, monkeypatch):
    from bot.exchange import cli as exchange_cli

    seen = []
    monkeypatch.setattr(exchange_cli, "run", lambda args: seen.append(args.markets) or 0)
    assert run(capsys, "exchange", "--markets", "3")[0] == 0
    assert seen == [3]


# -- against the local exchange ------------------------------------------------------------------


@pytest.fixture
def live(exchange, tmp_path, monkeypatch):  # noqa: F811
    u, d = exchange.urls, exchange.demo_account
    cfg = tmp_path / "live.toml"
    cfg.write_text(u.venue_toml())
    monkeypatch.setenv("BOT_PRIVATE_KEY", d.private_key)
    monkeypatch.setenv("BOT_API_KEY", d.creds.apiKey)
    monkeypatch.setenv("BOT_API_SECRET", d.creds.secret)
    monkeypatch.setenv("BOT_API_PASSPHRASE", d.creds.passphrase)
    return types.SimpleNamespace(config=str(cfg), demo=d, urls=u)


def test_keys_derive_against_the_exchange(capsys, live):
    c = live.demo.creds
    code, out, err = run(capsys, "--config", live.config, "keys", "derive")
    assert code == 0, err
    assert c.apiKey in out and c.secret not in out and c.passphrase not in out and "***" in out
    code, out, _ = run(capsys, "--config", live.config, "keys", "derive", "--show-secrets")
    assert code == 0 and c.secret in out and c.passphrase in out
    code, out, _ = run(capsys, "--config", live.config, "keys", "derive", "--export")
    assert code == 0
    assert out.splitlines() == [f"export BOT_API_KEY={c.apiKey}", f"export BOT_API_SECRET={c.secret}",
                                f"export BOT_API_PASSPHRASE={c.passphrase}"]


def test_markets_book_order_orders_cancel_positions(capsys, live):
    code, out, err = run(capsys, "--config", live.config, "markets", "--active", "--limit", "2", "--json")
    assert code == 0, err
    market = json.loads(out)[0]
    token = market["tokens"][0]["token_id"]

    code, out, _ = run(capsys, "--config", live.config, "book", token, "--json")
    assert code == 0
    book = json.loads(out)
    assert book["token_id"] == token and book["best_bid"] is not None

    # a resting BUY well below the best bid, built by the CLI and sent here by hand
    code, out, err = run(capsys, "--config", live.config, "order", "build", "--token", token, "--side", "BUY",
                         "--price", "0.01", "--size", "5", "--fetch", "--condition-id", market["condition_id"],
                         "--json", "--show-secrets")
    assert code == 0, err
    built = json.loads(out)
    reply = httpx.post(built["url"], content=built["body"].encode(), headers=built["headers"])
    assert reply.status_code == 200 and reply.json()["success"] is True, reply.text

    code, out, _ = run(capsys, "--config", live.config, "orders", "--json")
    assert code == 0
    assert built["order_id"] in [o["id"] for o in json.loads(out)]
    code, out, _ = run(capsys, "--config", live.config, "orders")
    assert code == 0 and built["order_id"] in out

    code, out, _ = run(capsys, "--config", live.config, "cancel-all", "--json")
    assert code == 0 and built["order_id"] in json.loads(out)["canceled"]
    code, out, _ = run(capsys, "--config", live.config, "orders", "--json")
    assert code == 0 and built["order_id"] not in [o["id"] for o in json.loads(out)]

    code, out, _ = run(capsys, "--config", live.config, "positions", "--json")
    assert code == 0
    positions = json.loads(out)
    assert positions and all(p["proxyWallet"].lower() == live.demo.address.lower() for p in positions)
    code, out, _ = run(capsys, "--config", live.config, "positions")
    assert code == 0 and "position(s) of" in out


def test_markets_neg_risk_agrees_with_the_book(capsys, live):
    code, out, err = run(capsys, "--config", live.config, "markets", "--active", "--limit", "100", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert any(r["neg_risk"] for r in rows) and not all(r["neg_risk"] for r in rows)
    for r in rows:
        code, out, err = run(capsys, "--config", live.config, "book", r["tokens"][0]["token_id"], "--json")
        assert code == 0, err
        assert json.loads(out)["neg_risk"] is r["neg_risk"], r["question"]


# -- the installed script ------------------------------------------------------------------------


def test_installed_script(tmp_path):
    bot = REPO / ".venv" / "bin" / "bot"
    exe = [str(bot)] if bot.exists() else [sys.executable, "-m", "bot.cli"]
    ok = subprocess.run([*exe, "config", "check", str(EXAMPLE)], capture_output=True, text=True, timeout=60,
                        cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: ")
    bad = tmp_path / "bad.toml"
    bad.write_text("[venue]\nsignature_type = 9\n")
    failed = subprocess.run([*exe, "config", "check", str(bad)], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path)
    assert failed.returncode == 2 and failed.stdout == ""
    assert_one_line_error(failed.stderr, "signature_type")


def test_record_onto_a_file_is_one_line_before_any_request(capsys, tmp_path):
    target = tmp_path / "recordings"
    target.write_text("not a folder")

    def handler(request):  # pragma: no cover - must not be called
        raise AssertionError("sent")

    code, _, err = run(capsys, "record", "--limit", "1", "--out", str(target), transport=httpx.MockTransport(handler))
    assert code == 2
    assert_one_line_error(err, f"--out {target} is a file")
    assert "Errno" not in err and target.read_text() == "not a folder"


def test_new_strategy_writes_three_files_and_refuses_in_one_line(capsys, tmp_path):
    code, out, err = run(capsys, "new", "strategy", "mine", "--dir", str(tmp_path))
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.py", "mine.toml", "test_mine.py"]
    assert out.startswith("wrote ") and "next: " in out
    code, _, err = run(capsys, "new", "strategy", "mine", "--dir", str(tmp_path))
    assert code == 2
    assert_one_line_error(err, "bot new strategy", "already exist", "nothing was written")
