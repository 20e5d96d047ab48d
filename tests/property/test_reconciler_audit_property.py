"""Reconciler bookkeeping under any sequence of what we send and what the venue answers.

After every call, whatever came in: each order that changed is journaled as it now is and told
as an ``OrderUpdate`` (the two lists agree, in order); a state change is stamped with the call's
time; an order's size left moves its token's quoting version, a change the diff does not read
(a state that stays quoting or not, a reason) does not; only real tokens are counted; every fill
is journaled once and every reversal once, the trades' statuses and the cursor journaled as they
move. The journal alone rebuilds what the reconciler knows.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from bot.core.events import Fill, FillReversal
from bot.execution.orders import OwnOrder
from bot.execution.reconciler import OrderUpdate, Reconciler, ReconcilerConfig
from bot.venue.enums import OrderType, Side

U = 1_000_000
TOKENS = ("t1", "t2")
OIDS = ("0xa", "0xb", "0xc", "0xd")
TOKEN_OF = {"0xa": "t1", "0xb": "t1", "0xc": "t2", "0xd": "t2"}
TYPE_OF = {"0xa": OrderType.GTC, "0xb": OrderType.GTC, "0xc": OrderType.GTD, "0xd": OrderType.FAK}


class RecordingJournal:
    """A journal that keeps what it is told, as it was when told."""

    def __init__(self) -> None:
        self.orders: list[OrderUpdate] = []
        self.trade_ids: dict[str, tuple[str, ...]] = {}  # order id -> its trades, as last journaled
        self.fills: list[Fill] = []
        self.reversals: list[Fill] = []
        self.statuses: list[tuple[str, object]] = []
        self.cursors: list[tuple[str, str]] = []
        self.commits = 0

    def order(self, o: OwnOrder) -> None:
        self.orders.append(OrderUpdate(o.order_id, o.token_id, o.state, o.filled, o.remaining, o.reason))
        self.trade_ids[o.order_id] = tuple(o.trade_ids)

    def fill(self, fill: Fill) -> None:
        self.fills.append(fill)

    def reversal(self, fill: Fill) -> None:
        self.reversals.append(fill)

    def trade_status(self, trade_id: str, status) -> None:
        self.statuses.append((trade_id, status))

    def cursor(self, name: str, value: str) -> None:
        self.cursors.append((name, value))

    def commit(self) -> None:
        self.commits += 1


def new_order(oid: str) -> OwnOrder:
    return OwnOrder(oid, TOKEN_OF[oid], Side.BUY, 400_000, 10 * U, order_type=TYPE_OF[oid], signed={"hash": oid})


def order_item(oid: str, status: str, matched: int, typ: str, trades: tuple[str, ...] = ()) -> dict:
    return {"id": oid, "asset_id": TOKEN_OF.get(oid, "t1"), "market": "0xm", "side": "BUY", "price": "0.4",
            "original_size": "10", "size_matched": str(matched), "status": status, "type": typ,
            "order_type": "GTD", "associate_trades": list(trades) or None}


def trade_item(tid: str, oid: str, taker: bool, size: int, status: str) -> dict:
    makers = [{"order_id": "0xother", "matched_amount": "1", "price": "0.4", "asset_id": TOKEN_OF[oid],
               "side": "BUY", "owner": "k2"}]
    if not taker:
        makers.append({"order_id": oid, "matched_amount": str(size), "price": "0.4", "asset_id": TOKEN_OF[oid],
                       "side": "BUY", "owner": "k1"})
    return {"id": tid, "taker_order_id": oid if taker else "0xsomeone", "market": "0xm", "asset_id": TOKEN_OF[oid],
            "side": "BUY" if taker else "SELL", "size": str(size), "price": "0.4", "status": status,
            "match_time": "1700000000", "fee_rate_bps": "100", "maker_orders": makers}


oid_st = st.sampled_from(OIDS)
op_st = st.one_of(
    st.tuples(st.just("sent"), oid_st),
    st.tuples(st.just("ack"), oid_st, st.sampled_from(["live", "matched", "delayed", "unmatched", "refused"])),
    st.tuples(st.just("place_failed"), oid_st, st.booleans()),
    st.tuples(st.just("cancels_sent"), oid_st),
    st.tuples(st.just("cancel_result"), oid_st, st.sampled_from(["canceled", "not found", "none"])),
    st.tuples(st.just("cancel_failed"), oid_st),
    st.tuples(st.just("event"), oid_st, st.sampled_from(["LIVE", "MATCHED", "CANCELED", "UNMATCHED", "INVALID"]),
              st.integers(0, 10), st.sampled_from(["PLACEMENT", "UPDATE", "CANCELLATION"]),
              st.sampled_from([(), ("tr0",), ("tr1", "tr2")])),
    st.tuples(st.just("trade"), st.integers(0, 3), oid_st, st.booleans(), st.integers(1, 6),
              st.sampled_from(["MATCHED", "MINED", "CONFIRMED", "FAILED"])),
    st.tuples(st.just("lookup"), oid_st, st.sampled_from(["LIVE", "CANCELED", "MATCHED", None]), st.integers(0, 10),
              st.booleans()),
    st.tuples(st.just("listing"), st.lists(st.sampled_from(OIDS + ("0xorphan",)), max_size=3, unique=True),
              st.integers(0, 10), st.sampled_from([0.0, 0.5, 1.0])),
    st.tuples(st.just("trades_page"), st.integers(0, 3), oid_st, st.booleans(), st.integers(1, 6),
              st.sampled_from(["MATCHED", "CONFIRMED", "FAILED"]), st.sampled_from(["MTAw", "LTE="])),
)


def apply(rec: Reconciler, op: tuple, now: float) -> list:
    kind, args = op[0], op[1:]
    if kind == "sent":
        return rec.on_places_sent([new_order(args[0])], now)
    if kind == "ack":
        oid, status = args
        ok = status != "refused"
        return rec.on_ack(oid, {"success": ok, "errorMsg": "" if ok else "not enough balance",
                                "orderID": oid if ok else "", "status": status if ok else ""}, now)
    if kind == "place_failed":
        return rec.on_place_failed([args[0]], now, unknown=args[1], reason="timeout" if args[1] else "429")
    if kind == "cancels_sent":
        return rec.on_cancels_sent([args[0]], now)
    if kind == "cancel_result":
        oid, answer = args
        body = {"canceled": [oid] if answer == "canceled" else [],
                "not_canceled": {oid: answer} if answer == "not found" else {}}
        return rec.on_cancel_result(body, now, requested=[oid])
    if kind == "cancel_failed":
        return rec.on_cancel_failed([args[0]], now)
    if kind == "event":
        oid, status, matched, typ, trades = args
        return rec.on_order_event(order_item(oid, status, matched, typ, trades), now)
    if kind == "trade":
        i, oid, taker, size, status = args
        return rec.on_trade_event(trade_item(f"tr{i}", oid, taker, size, status), now)
    if kind == "lookup":
        oid, status, matched, asked_before = args
        found = None if status is None else order_item(oid, status, matched, "")
        return rec.on_order_lookup(oid, found, now, as_of=now - 1.0 if asked_before else now)
    if kind == "listing":
        oids, matched, back = args
        return rec.on_open_orders([order_item(o, "LIVE", matched, "") for o in oids], now, as_of=now - back)
    i, oid, taker, size, status, next_cursor = args
    return rec.on_trades_page([trade_item(f"tr{i}", oid, taker, size, status)], now,
                              cursor=rec.trades_cursor, next_cursor=next_cursor)


def snapshot(rec: Reconciler) -> dict[str, tuple]:
    return {o.order_id: (o.state, o.filled, o.venue_matched, o.remaining, o.reason, o.answered_at, o.updated_at,
                         o.token_id, tuple(o.trade_ids))
            for o in rec.orders}


@seed(20240613)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op_st, min_size=3, max_size=40), st.sampled_from(["adopt", "cancel", "ignore"]))
def test_every_change_is_journaled_stamped_told_and_counted(ops, policy):
    journal = RecordingJournal()
    rec = Reconciler(ReconcilerConfig(orphan_policy=policy, owner="k1"), journal=journal)
    store = rec.orders
    reversed_fills: list[Fill] = []
    ops = [("sent", oid) for oid in OIDS[:3]] + ops  # 0xd is sent only when drawn (fills may come first)
    for i, op in enumerate(ops):
        now = 10.0 + i
        before = snapshot(rec)
        quoting = dict(store.quoting_versions)
        told_before, commits = len(journal.orders), journal.commits
        fills_before, reversals_before = len(journal.fills), len(journal.reversals)
        out = apply(rec, op, now)
        after = snapshot(rec)
        assert journal.commits == commits + 1, "each call commits what it journaled, once"
        # every order update is journaled, in the same order, as the order is when told
        told = journal.orders[told_before:]
        assert [x for x in out if isinstance(x, OrderUpdate)] == told
        assert set(store.versions) <= set(TOKENS) and set(store.quoting_versions) <= set(TOKENS)
        for oid, now_is in after.items():
            was = before.get(oid)
            o = store.get(oid)
            if was is None:
                assert now_is[6] == now and o.sent_at == now  # filed now
                continue
            moved = was[:4] != now_is[:4] or was[8] != now_is[8]
            if moved:  # the journal holds the order as it is now
                assert [u for u in told if u.order_id == oid][-1] == OrderUpdate(
                    oid, o.token_id, o.state, o.filled, o.remaining, o.reason)
                assert journal.trade_ids[oid] == now_is[8]
            if was[0] is not now_is[0]:
                assert now_is[6] == now, "a state change is stamped with its time"
            if was[5] != now_is[5]:
                assert now_is[5] == now, "answered when the venue showed it"
        # a size change moves the diff's version; a state change alone only when it stops or
        # starts quoting (a fill the venue had counted already may move it too)
        for token in TOKENS:
            mine_before = {oid: v for oid, v in before.items() if v[7] == token}
            mine_after = {oid: v for oid, v in after.items() if v[7] == token}
            sized = any(mine_before[oid][1:3] != v[1:3] for oid, v in mine_after.items() if oid in mine_before) or any(
                isinstance(x, Fill) and x.token_id == token for x in out)
            read_before = {(oid, v[3]) for oid, v in mine_before.items() if v[0].quoting}
            read_after = {(oid, v[3]) for oid, v in mine_after.items() if v[0].quoting}
            if read_before == read_after and not sized:
                assert store.quoting_versions.get(token) == quoting.get(token), (token, op)
            else:
                assert store.quoting_versions.get(token, 0) > quoting.get(token, 0), (token, op)
        fills = [x for x in out if isinstance(x, Fill)]
        assert journal.fills[fills_before:] == fills
        reversals = [x.fill for x in out if isinstance(x, FillReversal)]
        assert journal.reversals[reversals_before:] == reversals
        reversed_fills += reversals
    # the journal alone rebuilds the fills, their reversals and the trades' statuses
    statuses = dict(journal.statuses)
    assert statuses == {tid: rec.trade_status(tid) for tid in statuses}
    assert {f.trade_id for f in journal.fills} <= set(statuses)
    assert sorted(f.key for f in journal.fills) == sorted(f.key for f in rec.fills())
    assert all(rec.is_reversed(f.trade_id, f.order_id) for f in reversed_fills)
    cursors = dict(journal.cursors)
    assert cursors == ({"trades": rec.trades_cursor} if cursors else {})
