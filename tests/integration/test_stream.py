"""Market and user streams against a real local WebSocket server scripted by each test."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from bot.core.book import Books
from bot.venue.auth import Credentials
from bot.venue.models.ws import BookEvent, OrderEvent, PriceChangeEvent
from bot.venue.stream import (
    ConnectionEvent,
    MarketStream,
    StreamConfig,
    UserStream,
    backoff_delay,
    shard_assets,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(40)]

WS = "realworld/nautechsystems__nautilus_trader/tests/integration_tests/adapters/polymarket/resources/ws_messages"


def fast_config(url: str, **kw: Any) -> StreamConfig:
    base = dict(url=url, ping_interval_s=0.1, stale_after_s=0.5, check_interval_s=0.05,
                backoff_base_s=0.05, backoff_cap_s=0.2, open_timeout_s=2.0, close_timeout_s=0.5,
                use_env_proxy=False)
    base.update(kw)
    return StreamConfig(**base)


def book_frame(assets: list[str], bid: str = "0.4", ask: str = "0.6") -> str:
    return json.dumps([
        {"event_type": "book", "asset_id": a, "market": "0xm", "timestamp": str(int(time.time() * 1000)),
         "hash": "h0", "bids": [{"price": "0.1", "size": "5"}, {"price": bid, "size": "10"}],
         "asks": [{"price": "0.9", "size": "5"}, {"price": ask, "size": "10"}]}
        for a in assets
    ])


class Conn:
    """What one server-side connection saw."""

    def __init__(self, ws: ServerConnection, first: Any) -> None:
        self.ws = ws
        self.first = first
        self.received: list[str] = []
        self.pings = 0


Behaviour = Callable[["Venue", Conn], Awaitable[None]]


async def answer(venue: "Venue", conn: Conn) -> None:
    """A well-behaved venue: snapshot of every subscribed asset, PONG to PING, ops honoured."""
    assets = list(conn.first.get("assets_ids") or [])
    if len(assets) > venue.cap:
        await conn.ws.close(1008, "too many assets")
        return
    if assets:
        await conn.ws.send(book_frame(assets))
    async for msg in conn.ws:
        conn.received.append(msg)
        if msg == "PING":
            conn.pings += 1
            await conn.ws.send("PONG")
            continue
        op = json.loads(msg)
        if op.get("operation") == "subscribe" and op.get("assets_ids"):
            await conn.ws.send(book_frame(op["assets_ids"]))


async def silent(venue: "Venue", conn: Conn) -> None:
    """Accepts, reads everything, never answers (not even PONG)."""
    async for msg in conn.ws:
        conn.received.append(msg)


async def drop_after_snapshot(venue: "Venue", conn: Conn) -> None:
    await conn.ws.send(book_frame(list(conn.first["assets_ids"])))
    await conn.ws.close(1011, "going away")


class Venue:
    """A scripted WebSocket server: connection i runs behaviours[i] (the last one repeats)."""

    def __init__(self, *behaviours: Behaviour, cap: int = 500) -> None:
        self.behaviours = list(behaviours) or [answer]
        self.cap = cap
        self.conns: list[Conn] = []
        self.opened_at: list[float] = []
        self.url = ""
        self.changed = anyio.Event()

    async def handler(self, ws: ServerConnection) -> None:
        try:
            first = json.loads(await ws.recv())
        except ConnectionClosed:
            return
        conn = Conn(ws, first)
        idx = len(self.conns)
        self.conns.append(conn)
        self.opened_at.append(time.monotonic())
        behaviour = self.behaviours[min(idx, len(self.behaviours) - 1)]
        try:
            await behaviour(self, conn)
        except ConnectionClosed:
            pass


async def wait_for(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll a condition with a deadline (no sleeping on luck)."""
    with anyio.fail_after(timeout):
        while not pred():
            await anyio.sleep(0.01)


async def next_matching(recv: Any, pred: Callable[[Any], bool], seen: list | None = None,
                        timeout: float = 10.0) -> Any:
    with anyio.fail_after(timeout):
        async for item in recv:
            if seen is not None:
                seen.append(item)
            if pred(item):
                return item
    raise AssertionError("stream ended")


def is_conn(kind: str, shard: int | None = None) -> Callable[[Any], bool]:
    return lambda e: isinstance(e, ConnectionEvent) and e.kind == kind and (shard is None or e.shard == shard)


class running_venue:
    def __init__(self, venue: Venue) -> None:
        self.venue = venue

    async def __aenter__(self) -> Venue:
        self._cm = serve(self.venue.handler, "127.0.0.1", 0)
        server = await self._cm.__aenter__()
        port = server.sockets[0].getsockname()[1]
        self.venue.url = f"ws://127.0.0.1:{port}"
        return self.venue

    async def __aexit__(self, *exc: Any) -> None:
        await self._cm.__aexit__(*exc)


# -- pure pieces ---------------------------------------------------------------------------


def test_backoff_is_full_jitter_capped() -> None:
    assert backoff_delay(0, 0.25, 30, lambda: 1.0) == 0.25
    assert backoff_delay(3, 0.25, 30, lambda: 1.0) == 2.0
    assert backoff_delay(10, 0.25, 30, lambda: 1.0) == 30
    assert backoff_delay(10_000, 0.25, 30, lambda: 0.5) == 15
    assert backoff_delay(5, 0.25, 30, lambda: 0.0) == 0.0


def test_shard_assets_caps_and_dedups() -> None:
    assets = [f"a{i}" for i in range(1201)] + ["a0"]
    groups = shard_assets(assets, 500)
    assert [len(g) for g in groups] == [500, 500, 201]
    assert sum(groups, []) == assets[:-1]


# -- market stream -------------------------------------------------------------------------


async def test_first_frame_ping_pong_snapshot_and_subscribe() -> None:
    async with running_venue(Venue(answer)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](1000)
        stream = MarketStream(send, ["A", "B"], fast_config(venue.url))
        books = Books(["A", "B", "C"])
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            ev = await next_matching(recv, lambda e: True)
            assert isinstance(ev, ConnectionEvent) and ev.kind == "connected"
            assert ev.shard == 0 and ev.subscriptions == ("A", "B") and ev.attempt == 0
            for _ in range(2):
                b = await next_matching(recv, lambda e: isinstance(e, BookEvent))
                books.apply_event(b)
            assert venue.conns[0].first == {"type": "market", "assets_ids": ["A", "B"],
                                             "custom_feature_enabled": False}
            assert books["A"].best_bid == 400_000 and books["B"].best_ask == 600_000
            # keepalive: text PING out, text PONG back, counted
            await wait_for(lambda: stream.counters.pongs >= 3 and venue.conns[0].pings >= 3)
            await stream.subscribe(["C", "A"])
            b = await next_matching(recv, lambda e: isinstance(e, BookEvent))
            assert b.asset_id == "C"
            ops = [json.loads(m) for m in venue.conns[0].received if m != "PING"]
            assert ops == [{"operation": "subscribe", "assets_ids": ["C"]}]
            await stream.unsubscribe(["A"])
            await wait_for(lambda: any(m.startswith('{"operation":"unsubscribe"') for m in venue.conns[0].received))
            assert stream.asset_ids == ["B", "C"]
            assert len(venue.conns) == 1 and stream.counters.reconnects == 0
            tg.cancel_scope.cancel()


async def test_silent_server_goes_stale_reconnects_with_backoff_and_full_first_frame() -> None:
    async with running_venue(Venue(silent, answer)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](1000)
        draws: list[float] = []

        def rnd() -> float:
            draws.append(1.0)
            return 1.0  # the top of the jitter range: delay = min(base * 2**attempt, cap)

        cfg = fast_config(venue.url, stale_after_s=0.4, backoff_base_s=0.15)
        stream = MarketStream(send, ["A"], cfg, rnd=rnd)
        books = Books(["A", "B"])
        seen: list[Any] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            up = await next_matching(recv, is_conn("connected"), seen)
            # a subscription made on the silent connection must survive the reconnect
            await stream.subscribe(["B"])
            stale = await next_matching(recv, is_conn("stale"), seen)
            assert stale.at - up.at >= 0.4 - 0.02  # not before stale_after_s of silence
            assert stale.subscriptions == ("A", "B") and "nothing received" in stale.reason
            books.mark_stale(stale.subscriptions)  # what the engine does
            assert books["A"].stale
            await next_matching(recv, is_conn("disconnected"), seen)
            rec = await next_matching(recv, is_conn("reconnected"), seen)
            assert rec.attempt == 1 and rec.shard == 0
            await wait_for(lambda: len(venue.conns) == 2)
            # backoff: one full-jitter draw, waited before reopening
            assert draws == [1.0]
            assert venue.opened_at[1] - venue.opened_at[0] >= 0.4 + 0.15 - 0.05
            assert venue.conns[1].first == {"type": "market", "assets_ids": ["A", "B"],
                                             "custom_feature_enabled": False}
            assert "PING" in venue.conns[0].received  # we did ping the silent server
            assert {"operation": "subscribe", "assets_ids": ["B"]} in [
                json.loads(m) for m in venue.conns[0].received if m != "PING"]
            epoch_before = books["A"].epoch
            for _ in range(2):
                books.apply_event(await next_matching(recv, lambda e: isinstance(e, BookEvent), seen))
            assert books["A"].epoch == epoch_before + 1 and not books["A"].stale
            assert not books["B"].stale
            await wait_for(lambda: stream.counters.pongs >= 1)
            assert stream.counters.stale == 1 and stream.counters.reconnects == 1
            kinds = [e.kind for e in seen if isinstance(e, ConnectionEvent)]
            assert kinds == ["connected", "stale", "disconnected", "reconnected"]
            tg.cancel_scope.cancel()


async def test_dropped_connection_reconnects_and_backoff_grows_until_healthy() -> None:
    async with running_venue(Venue(drop_after_snapshot, silent, silent, answer)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](1000)
        cfg = fast_config(venue.url, stale_after_s=0.2, backoff_base_s=0.01, backoff_cap_s=1.0)
        stream = MarketStream(send, ["A"], cfg, rnd=lambda: 1.0)
        seen: list[Any] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            await next_matching(recv, is_conn("connected"), seen)
            gone = await next_matching(recv, is_conn("disconnected"), seen)
            assert "1011" in gone.reason
            # connection 1 delivered a snapshot (healthy: attempt reset), 2 and 3 stay silent
            attempts = []
            for _ in range(3):
                attempts.append((await next_matching(recv, is_conn("reconnected"), seen)).attempt)
            # the drop came after a healthy connection (attempt reset); silent ones keep growing it
            assert attempts == [1, 2, 3]
            await next_matching(recv, lambda e: isinstance(e, BookEvent), seen)
            books = [e for e in seen if isinstance(e, BookEvent)]
            assert len(books) == 2 and len(venue.conns) == 4
            tg.cancel_scope.cancel()


async def test_malformed_frames_are_counted_and_the_stream_goes_on(data_dir: Path) -> None:
    good = (data_dir / WS / "price_change_v2.json").read_text()

    async def garbage(venue: Venue, conn: Conn) -> None:
        await conn.ws.send("{not json")
        await conn.ws.send('{"event_type":"book","asset_id":1}')  # known type, bad shape
        await conn.ws.send('[{"event_type":"price_change","price_changes":"x","market":"m","timestamp":"1"}]')
        await conn.ws.send(b"\xff\xfe binary junk")
        await conn.ws.send('{"event_type":"something_new","x":1}')
        await conn.ws.send(good)
        await answer(venue, conn)

    async with running_venue(Venue(garbage)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](1000)
        stream = MarketStream(send, ["A"], fast_config(venue.url))
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            pc = await next_matching(recv, lambda e: isinstance(e, PriceChangeEvent))
            assert len(pc.price_changes) == 3
            c = stream.counters
            assert c.decode_errors == 2  # known event types with a bad shape
            assert c.ignored_frames == 3  # not JSON, binary junk, unknown event type
            assert c.messages >= 1 and c.reconnects == 0 and c.last_lag_s > 0
            await wait_for(lambda: c.pongs >= 1)  # still alive
            tg.cancel_scope.cancel()


async def test_a_tap_sees_every_frame_as_received_with_its_receive_time(data_dir: Path) -> None:
    good = (data_dir / WS / "price_change_v2.json").read_bytes()
    sent = [b"{not json", b"\xff\xfe binary junk", good, b'{"event_type":"something_new","x":1}']

    async def script(venue: Venue, conn: Conn) -> None:
        for frame in sent:
            await conn.ws.send(frame)
        await answer(venue, conn)

    tapped: list[tuple[int, bytes, int]] = []
    async with running_venue(Venue(script)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](1000)
        before = time.time_ns()
        stream = MarketStream(send, ["A"], fast_config(venue.url),
                              tap=lambda shard, frame, t: tapped.append((shard, frame, t)))
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            await wait_for(lambda: len(tapped) >= len(sent) + 1)
            tg.cancel_scope.cancel()
    frames = [f for _, f, _ in tapped]
    assert frames[:len(sent)] == sent  # bytes as received, binary and malformed included
    assert json.loads(frames[len(sent)])[0]["event_type"] == "book"  # the snapshot after them
    times = [t for _, _, t in tapped]
    assert before <= times[0] and times == sorted(times) and times[-1] <= time.time_ns()
    assert {shard for shard, _, _ in tapped} == {0}


async def test_assets_are_sharded_at_500_per_connection() -> None:
    assets = [f"{10**70 + i}" for i in range(1001)]
    async with running_venue(Venue(answer, cap=500)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](10_000)
        stream = MarketStream(send, assets, fast_config(venue.url))
        books = Books(assets + ["late1", "late2"])
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            await wait_for(lambda: len(venue.conns) == 3)
            got: set[str] = set()
            with anyio.fail_after(15):
                async for ev in recv:
                    if isinstance(ev, BookEvent):
                        books.apply_event(ev)
                        got.add(ev.asset_id)
                        if len(got) == len(assets):
                            break
            sizes = sorted(len(c.first["assets_ids"]) for c in venue.conns)
            assert sizes == [1, 500, 500]
            assert sorted(a for c in venue.conns for a in c.first["assets_ids"]) == sorted(assets)
            assert stream.shards.keys() == {0, 1, 2}
            # new assets fill the shard with room instead of opening a fourth connection
            await stream.subscribe(["late1", "late2"])
            with anyio.fail_after(5):
                async for ev in recv:
                    if isinstance(ev, BookEvent) and ev.asset_id.startswith("late"):
                        books.apply_event(ev)
                        if books["late1"].snapshots and books["late2"].snapshots:
                            break
            assert len(venue.conns) == 3 and stream.shard_of("late1") == 2
            assert all(not books[a].stale for a in assets)
            assert stream.counters.decode_errors == 0 and stream.counters.disconnects == 0
            tg.cancel_scope.cancel()


async def test_shard_over_the_cap_is_closed_by_the_venue() -> None:
    # a misconfigured client (cap above the venue's) is refused with 1008 and keeps retrying
    async with running_venue(Venue(answer, cap=2)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](1000)
        stream = MarketStream(send, ["A", "B", "C"], fast_config(venue.url, max_assets_per_connection=3))
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            gone = await next_matching(recv, is_conn("disconnected"))
            assert "1008" in gone.reason
            tg.cancel_scope.cancel()


# -- user stream ---------------------------------------------------------------------------


async def test_user_stream_auth_frame_events_and_reconnect(data_dir: Path) -> None:
    placement = (data_dir / WS / "order_placement.json").read_text()

    async def user_venue(venue: Venue, conn: Conn) -> None:
        await conn.ws.send(placement)
        if len(venue.conns) == 1:
            await conn.ws.close(1011, "restart")
            return
        await answer(venue, conn)

    creds = Credentials("key-1", "c2VjcmV0LXZhbHVl", "pass-phrase-9")
    async with running_venue(Venue(user_venue)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](1000)
        with structlog.testing.capture_logs() as logs:
            stream = UserStream(send, creds, ["0xABC"], fast_config(venue.url))
            async with anyio.create_task_group() as tg:
                tg.start_soon(stream.run)
                o = await next_matching(recv, lambda e: isinstance(e, OrderEvent))
                assert o.type == "PLACEMENT"
                rec = await next_matching(recv, is_conn("reconnected"))
                assert rec.channel == "user" and rec.subscriptions == ("0xABC",)
                await next_matching(recv, lambda e: isinstance(e, OrderEvent))
                await stream.subscribe(["0xDEF"])
                await wait_for(lambda: any("0xDEF" in m for m in venue.conns[1].received))
                await wait_for(lambda: stream.counters.pongs >= 1)
                tg.cancel_scope.cancel()
        for conn in venue.conns:
            assert conn.first == {"type": "user", "markets": ["0xABC"], "auth": {
                "apiKey": "key-1", "secret": "c2VjcmV0LXZhbHVl", "passphrase": "pass-phrase-9"}}
        assert json.loads(venue.conns[1].received[-1] if venue.conns[1].received[-1] != "PING"
                          else next(m for m in venue.conns[1].received if m != "PING")) == {
            "operation": "subscribe", "markets": ["0xDEF"]}
        text = repr(logs) + repr(stream)
        assert logs and "c2VjcmV0LXZhbHVl" not in text and "pass-phrase-9" not in text


async def test_callback_sink_receives_events() -> None:
    got: list[Any] = []
    done = anyio.Event()

    def on_event(e: Any) -> None:
        got.append(e)
        if isinstance(e, BookEvent):
            done.set()

    async with running_venue(Venue(answer)) as venue:
        stream = MarketStream(on_event, ["A"], fast_config(venue.url))
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            with anyio.fail_after(5):
                await done.wait()
            tg.cancel_scope.cancel()
    assert isinstance(got[0], ConnectionEvent) and isinstance(got[1], BookEvent)


async def test_empty_shard_is_closed_and_the_others_keep_running() -> None:
    async with running_venue(Venue(answer)) as venue:
        send, recv = anyio.create_memory_object_stream[Any](1000)
        stream = MarketStream(send, ["A", "B", "C"], fast_config(venue.url, max_assets_per_connection=2))
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            await wait_for(lambda: stream.connected(0) and stream.connected(1))
            await stream.unsubscribe(["C"])
            await wait_for(lambda: len(venue.conns) == 2 and venue.conns[1].ws.state.name == "CLOSED")
            assert stream.shards == {0: ("A", "B")}
            pongs = stream.counters.pongs
            await wait_for(lambda: stream.counters.pongs > pongs + 2)
            assert stream.connected(0) and stream.counters.reconnects == 0
            tg.cancel_scope.cancel()


class FakeClob:
    """Stands in for the CLOB client's ``books(token_ids)`` (POST /books)."""

    def __init__(self, data_dir: Path) -> None:
        from bot.venue.models.book import OrderBook
        import msgspec

        path = data_dir / WS.replace("ws_messages", "http_responses") / "book.json"
        self.template = msgspec.json.decode(path.read_bytes(), type=OrderBook)
        self.calls: list[list[str]] = []

    async def books(self, token_ids: list[str]) -> list[Any]:
        import msgspec

        self.calls.append(list(token_ids))
        return [msgspec.structs.replace(self.template, asset_id=t) for t in token_ids]


async def test_rest_books_fetched_by_batch_feed_the_books(data_dir: Path) -> None:
    """The fallback's batches, fetched as the live shell fetches them (one ``books(batch)`` per
    batch), refresh the books they name and leave the others stale."""
    from bot.core.feed import Feed, FeedConfig

    client = FakeClob(data_dir)
    tokens = [f"t{i}" for i in range(5)]
    books = Books(tokens)
    feed = Feed(FeedConfig(batch_size=2), tokens)
    batches = feed.due_polls(0.0)
    assert batches == [["t0", "t1"], ["t2", "t3"], ["t4"]]
    fetched = [b for batch in batches[:2] for b in await client.books(batch)]
    assert client.calls == [["t0", "t1"], ["t2", "t3"]]
    updated = feed.apply_rest_books(books, fetched, 0.5)
    assert len(updated) == 4 and all(b.best_ask == 140_000 and b.epoch == 1 for b in updated)
    assert books["t4"].stale and feed.is_stale("t4", 0.5) and not feed.is_stale("t0", 0.5)


async def test_a_frame_is_stamped_when_it_came_off_the_socket_not_when_the_reader_got_to_it() -> None:
    later = json.dumps({"event_type": "price_change", "market": "m", "timestamp": "2", "price_changes": [
        {"asset_id": "A", "price": "0.5", "size": "1", "side": "BUY", "hash": "x"}]})

    async def script(venue: Venue, conn: Conn) -> None:
        await conn.ws.send(book_frame(["A"]))
        await conn.ws.send(later)  # arrives while the consumer still holds the first frame
        await answer(venue, conn)

    seen: list[tuple[str, float, float, float]] = []
    stream: MarketStream

    async def sink(ev: Any) -> None:
        if isinstance(ev, (BookEvent, PriceChangeEvent)):
            seen.append((type(ev).__name__, stream.rx_at, stream.rx_wall, time.perf_counter()))
            if isinstance(ev, BookEvent):
                await anyio.sleep(0.3)  # a busy consumer

    async with running_venue(Venue(script)) as venue:
        stream = MarketStream(sink, ["A"], fast_config(venue.url))
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            await wait_for(lambda: len(seen) >= 2)
            tg.cancel_scope.cancel()
    (_, rx_book, _, _), (kind, rx_change, wall_change, delivered) = seen[:2]
    assert kind == "PriceChangeEvent"
    assert delivered - rx_change >= 0.25  # it waited in the client, and its stamp says so
    assert rx_change - rx_book < 0.25  # both came off the socket together
    assert abs((time.time() - time.perf_counter()) - (wall_change - rx_change)) < 0.05


def price_change(i: int, asset: str = "A") -> str:
    return json.dumps({"event_type": "price_change", "market": "m", "timestamp": str(i), "price_changes": [
        {"asset_id": asset, "price": f"0.{i % 9 + 1}", "size": str(i), "side": "BUY", "hash": f"h{i}"}]})


async def test_a_plain_callable_gets_each_frame_in_the_socket_callback_in_the_order_sent() -> None:
    """No reader task between the socket and the consumer: the events of a frame reach a plain
    callable from the connection's ``data_received`` (no task is running), after the connection
    event, every frame in the order the venue sent it, the snapshot sent with the subscription's
    answer included (it may reach the client before the reader starts: it goes through the
    reader, still first)."""
    n = 200

    async def burst(venue: Venue, conn: Conn) -> None:
        await conn.ws.send(book_frame(["A"]))
        for i in range(1, n + 1):
            await conn.ws.send(price_change(i))
        await answer(venue, conn)

    import asyncio

    got: list[Any] = []
    in_task: list[bool] = []

    def on_event(e: Any) -> None:
        got.append(e)
        if isinstance(e, PriceChangeEvent):
            in_task.append(asyncio.current_task() is not None)

    async with running_venue(Venue(burst)) as venue:
        stream = MarketStream(on_event, ["A"], fast_config(venue.url))
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            await wait_for(lambda: sum(isinstance(e, PriceChangeEvent) for e in got) == n)
            tg.cancel_scope.cancel()
    assert isinstance(got[0], ConnectionEvent) and got[0].kind == "connected"
    assert isinstance(got[1], BookEvent)
    assert [int(e.timestamp) for e in got if isinstance(e, PriceChangeEvent)] == list(range(1, n + 1))
    assert not all(in_task), "every frame went through the reader task"


async def test_a_callable_that_asks_to_wait_holds_the_socket_until_it_is_done() -> None:
    """The consumer returns an awaitable (its buffer is full): the connection reads no more until
    it is done, then every frame arrives, in order."""
    n = 50

    async def burst(venue: Venue, conn: Conn) -> None:
        for i in range(1, n + 1):
            await conn.ws.send(price_change(i))
        await answer(venue, conn)

    got: list[int] = []
    full = anyio.Event()
    drained = anyio.Event()

    def on_event(e: Any) -> Any:
        if not isinstance(e, PriceChangeEvent):
            return None
        got.append(int(e.timestamp))
        if len(got) == 5:
            full.set()
            return drained.wait()
        return None

    async with running_venue(Venue(burst)) as venue:
        stream = MarketStream(on_event, ["A"], fast_config(venue.url))
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.run)
            with anyio.fail_after(10):
                await full.wait()
            ws = stream._links[0].ws
            assert ws is not None and not ws.transport.is_reading()  # held: nothing more is read
            drained.set()
            await wait_for(lambda: len(got) == n)
            assert ws.transport.is_reading()
            tg.cancel_scope.cancel()
    assert got == list(range(1, n + 1))


async def test_a_callable_that_fails_in_the_socket_callback_ends_the_stream_with_its_error() -> None:
    class Broken(Exception):
        pass

    def on_event(e: Any) -> None:
        if isinstance(e, PriceChangeEvent) and e.timestamp == "3":
            raise Broken("the consumer failed")

    async def burst(venue: Venue, conn: Conn) -> None:
        await conn.ws.send(book_frame(["A"]))
        for i in range(1, 6):
            await conn.ws.send(price_change(i))
        await answer(venue, conn)

    async with running_venue(Venue(burst)) as venue:
        stream = MarketStream(on_event, ["A"], fast_config(venue.url))
        with pytest.raises(BaseExceptionGroup) as info:
            with anyio.fail_after(10):
                await stream.run()
    assert info.group_contains(Broken)
    assert len(venue.conns) == 1  # ended, not reconnected
