"""The report of a run: its results (``bot.results.read.RunResults``) as figures and tables, and
those as one self-contained HTML file (plotly.js embedded: it opens offline).

A report is a list of sections, each a list of parts (a plotly figure, a table, a note), built by
pure functions from the results; ``render_html`` turns any report into the page, so another
section (a comparison of two runs, say) is one more ``Section`` appended to ``Report.sections``.

Invariants: every number shown comes from the results files (``build_report`` reads nothing
else); money is integer micro-units until it is formatted (``format_units``) or scaled for a
plot axis; every figure of the page is listed, by its element id, in the ``report-figures`` JSON
block, so a browser can check each one drew; a chart whose data the files do not hold is a note
saying so, never an empty chart; the page's size is bounded (series and fill markers are thinned
to ``MAX_POINTS`` / ``MAX_MARKERS`` per chart, every point still counted in the tables).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import statistics
from pathlib import Path
from typing import Any, Sequence, Union

import msgspec

from bot.execution.orders import OrderState
from bot.results import stats
from bot.results.folder import Summary
from bot.results.read import FillRecord, RunResults, Sample
from bot.strategy_set import strategy_rows
from bot.venue.enums import Side
from bot.venue.units import LOT, UNIT, format_units

MAX_POINTS = 20_000  # samples drawn per series chart (more are thinned evenly)
MAX_MARKERS = 20_000  # fills drawn per chart
COLORS = {"bid": "#2e7d32", "ask": "#c62828", "our_bid": "#1e88e5", "our_ask": "#fb8c00", "BUY": "#1b5e20", "SELL": "#b71c1c", "realized": "#1565c0",
          "unrealized": "#ef6c00", "fees": "#6a1b9a", "total": "#212121"}


# --- what a report is made of ------------------------------------------------------------------


class Figure(msgspec.Struct, frozen=True):
    """A plotly figure (``{"data": [...], "layout": {...}}``) drawn in the element ``id``."""

    id: str
    figure: dict[str, Any]


class Table(msgspec.Struct, frozen=True):
    id: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


class Note(msgspec.Struct, frozen=True):
    text: str


Part = Union[Figure, Table, Note]


class Section(msgspec.Struct, frozen=True):
    id: str
    title: str
    parts: tuple[Part, ...]


class Report(msgspec.Struct, frozen=True):
    title: str
    subtitle: str
    sections: tuple[Section, ...]

    @property
    def figure_ids(self) -> list[str]:
        return [p.id for s in self.sections for p in s.parts if isinstance(p, Figure)]


# --- the summary -------------------------------------------------------------------------------


def summary_from_files(results: RunResults) -> Summary:
    """The run's summary figures computed from its orders, fills and series (for runs that wrote
    none, as journals): what the files cannot say (events, wall time) is 0; a cancel counts once
    per order that was asked to cancel."""
    orders, fills, series = results.orders, results.fills, results.series
    volume = sum(f.size for f in fills)
    maker_volume = sum(f.size for f in fills if f.is_maker)
    times = [o.sent_at for o in orders] + [f.ts for f in fills] + [s.t for s in series]
    last = series[-1] if series else None
    totals = [s.total for s in series if s.total is not None]
    inventory: dict[str, tuple[int, int]] = {}
    for s in series:
        for tok, ts in s.tokens.items():
            lo, hi = inventory.get(tok, (ts.position, ts.position))
            inventory[tok] = (min(lo, ts.position), max(hi, ts.position))
    return Summary(
        mode=results.mode, events=0, seconds=max(times) - min(times) if times else 0.0, wall_seconds=0.0,
        events_per_s=0.0, orders_sent=len(orders),
        orders_rejected=sum(1 for o in orders if any(c.state is OrderState.REJECTED for c in o.changes)),
        cancels_sent=sum(1 for o in orders if any(c.state is OrderState.PENDING_CANCEL for c in o.changes)),
        fills=len(fills), maker_fills=sum(1 for f in fills if f.is_maker), volume=volume,
        notional=sum(f.price * f.size // UNIT for f in fills), fill_rate=stats.fill_rate(orders),
        maker_share=maker_volume / volume if volume else 0.0,
        realized=last.realized if last else 0, unrealized=(last.unrealized or 0) if last else 0,
        fees=last.fees if last else 0,
        pnl=(last.total if last.total is not None else last.realized - last.fees) if last else 0,
        max_drawdown=stats.max_drawdown(totals), inventory=inventory,
        final_position={t: ts.position for t, ts in last.tokens.items()} if last else {},
        fees_paid=sum(f.fee for f in fills if f.fee > 0),
        rebates=-sum(f.fee for f in fills if f.fee < 0),
    )


def market_time(seconds: float) -> str:
    """A span of market time in the unit that reads best: ``42.0 s``, ``2.5 min``, ``3.10 h``."""
    if seconds >= 3600:
        return f"{seconds / 3600:.2f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.1f} s"


def summary_rows(summary: Summary) -> list[tuple[str, str]]:
    """The summary as (figure, value) rows: USDC and shares as exact decimals."""
    m = format_units
    rows = [
        ("PnL (USDC)", m(summary.pnl)), ("realized (USDC)", m(summary.realized)),
        ("unrealized (USDC)", m(summary.unrealized)), ("fees (USDC)", m(summary.fees)),
        ("fees paid (USDC)", m(summary.fees_paid)), ("rebates earned (USDC)", m(summary.rebates)),
        ("max drawdown (USDC)", m(summary.max_drawdown)), ("orders sent", f"{summary.orders_sent:,}"),
        ("orders rejected", f"{summary.orders_rejected:,}"), ("cancels sent", f"{summary.cancels_sent:,}"),
        ("fills", f"{summary.fills:,}"), ("maker share of volume", f"{summary.maker_share:.1%}"),
        ("fill rate (orders with a fill)", f"{summary.fill_rate:.1%}"), ("volume (shares)", m(summary.volume)),
        ("notional (USDC)", m(summary.notional)),
    ]
    rows += set_rows(summary)
    if summary.events:
        rows.append(("events", f"{summary.events:,}"))
    if summary.wall_seconds:
        rows.append(("events/s", f"{summary.events_per_s:,.0f}"))
    rows.append(("market time", market_time(summary.seconds)))
    for token, (lo, hi) in summary.inventory.items():
        rows.append((f"inventory …{token[-8:]} (shares)", f"{m(lo)} .. {m(hi)}"))
    for token, size in summary.final_position.items():
        if size % LOT:  # fills have 6 decimals, orders sell whole lots: what no order can close
            rows.append((f"final position …{token[-8:]} (shares)",
                         f"{m(size)} (dust {m(size % LOT)}: under one lot, no order can sell it)"))
    for token, values in summary.estimates.items():
        for name, value in values.items():
            rows.append((f"estimate {name} (…{token[-8:]})", f"{value:.6g}"))
    rows += strategy_rows(summary.strategies)
    for halt in summary.halts:  # a halt stops the trading for the rest of a run: never left unsaid
        rows.append(("halted", halt))
    for warning in summary.warnings:
        rows.append(("warning", warning))
    if summary.seed is not None:
        rows.append(("seed", str(summary.seed)))
    return rows


def set_rows(summary: Summary) -> list[tuple[str, str]]:
    """The complete sets held at the end and the mergeable pairs among them, when there are any."""
    m = format_units
    rows = []
    if summary.sets:
        rows += [("complete sets (shares)", m(summary.sets)), ("locked value of the sets (USDC)", m(summary.sets_value)),
                 ("edge realized on the sets (USDC)", m(summary.sets_edge))]
    if summary.mergeable:
        rows += [("mergeable YES+NO pairs (shares)", m(summary.mergeable)),
                 ("capital locked in mergeable pairs (USDC)", m(summary.mergeable_cost))]
    return rows


# --- building the report -----------------------------------------------------------------------


def build_report(results: RunResults, *, horizons: Sequence[float] = stats.HORIZONS) -> Report:
    """The report of ``results``: summary, PnL, inventory, quotes and fills, markouts, fill rate
    and queue waits, and what the files do not hold."""
    summary = results.summary or summary_from_files(results)
    sections = [
        Section("summary", "Summary", (Table("summary-table", ("figure", "value"), tuple(summary_rows(summary))),)),
        Section("pnl", "PnL", pnl_parts(results.series)),
        Section("inventory", "Inventory", inventory_parts(results.series, results.tokens)),
        Section("quotes", "Quotes and fills", quote_parts(results)),
        Section("markouts", "Markouts", markout_parts(results, horizons)),
        Section("fills", "Fill rate and queue waits", fill_parts(results)),
    ]
    notes = [Note(n) for n in results.notes]
    if results.reversed:
        notes.append(Note(f"{len(results.reversed)} fill(s) reversed (their trade failed): left out of every figure"))
    data = summary.data_notes
    if data:  # what the books were (a top-of-book dataset's): said before any figure
        sections.insert(1, Section("data", "Data", tuple(Note(n) for n in data)))
    notes += [Note(f"assumption: {a}") for a in summary.assumptions if a not in data]
    if notes:
        sections.append(Section("notes", "Notes", tuple(notes)))
    span = _span(results)
    unfinished = results.summary is None and Path(results.source).is_dir()  # a results folder with no summary
    if unfinished:  # the run never wrote its summary: it did not finish
        sections.insert(1, Section("partial", "Partial run", (Note(
            "no summary.json: the run did not finish (killed or failed); every figure covers only what it wrote"),)))
    elif summary.partial:
        sections.insert(1, Section("partial", "Partial run", (Note(
            "the run was interrupted: every figure covers only the events read before it stopped"),)))
    partial = " (partial)" if unfinished or summary.partial else ""
    return Report(title=f"{results.mode} run: {Path(results.source).name}{partial}",
                  subtitle=f"{results.source} · {span}", sections=tuple(sections))


def _span(results: RunResults) -> str:
    times = [o.sent_at for o in results.orders] + [f.ts for f in results.fills] + [s.t for s in results.series]
    if not times:
        return "no activity"
    return f"{_iso(min(times))} to {_iso(max(times))} UTC"


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _thin(points: Sequence[Any]) -> Sequence[Any]:
    """At most about ``MAX_POINTS`` of ``points``, evenly spaced, the last one always kept."""
    step = math.ceil(len(points) / MAX_POINTS) if points else 1
    return points if step <= 1 else [*points[::step], *(points[-1:] if (len(points) - 1) % step else [])]


def _usdc(v: int | None) -> float | None:
    return v / UNIT if v is not None else None


def _layout(title: str, y: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "template": "plotly_white", "height": 420, "hovermode": "x unified",
            "margin": {"l": 60, "r": 20, "t": 50, "b": 40}, "legend": {"orientation": "h", "y": -0.15},
            "xaxis": {"type": "date"}, "yaxis": {"title": {"text": y}}, **extra}


def _line(name: str, x: list[str], y: list[Any], color: str | None = None, line: dict[str, Any] | None = None,
          **extra: Any) -> dict[str, Any]:
    """A step line (values hold until the next sample)."""
    style = {"shape": "hv", **({"color": color} if color else {}), **(line or {})}
    return {"type": "scatter", "mode": "lines", "name": name, "x": x, "y": y, "line": style, **extra}


def pnl_parts(series: Sequence[Sample]) -> tuple[Part, ...]:
    """PnL over time (realized, unrealized, fees, total) and the drawdown of the total."""
    if not series:
        return (Note("no series: PnL over time needs a series table (or a journal's fills)"),)
    pts = _thin(series)
    x = [_iso(s.t) for s in pts]
    marked = all(s.total is not None for s in series)
    traces = [_line("realized", x, [_usdc(s.realized) for s in pts], COLORS["realized"]),
              _line("fees paid", x, [_usdc(s.fees) for s in pts], COLORS["fees"])]
    if marked:
        traces.insert(1, _line("unrealized", x, [_usdc(s.unrealized) for s in pts], COLORS["unrealized"]))
        traces.append(_line("total", x, [_usdc(s.total) for s in pts], COLORS["total"], {"width": 3}))
    else:
        traces.append(_line("realized − fees", x, [_usdc(s.realized - s.fees) for s in pts], COLORS["total"]))
    parts: list[Part] = [Figure("fig-pnl", {"data": traces, "layout": _layout("PnL over time", "USDC")})]
    if marked:
        dd = stats.drawdown(s.total for s in series if s.total is not None)
        dd_pts = _thin(list(zip((s.t for s in series), dd)))
        parts.append(Figure("fig-drawdown", {
            "data": [_line("drawdown", [_iso(t) for t, _ in dd_pts], [-d / UNIT for _, d in dd_pts],
                           COLORS["ask"], fill="tozeroy")],
            "layout": _layout(f"Drawdown of total PnL (max {format_units(max(dd, default=0))} USDC)", "USDC"),
        }))
    else:
        parts.append(Note("no marks: unrealized and total PnL, and their drawdown, need the books"))
    return tuple(parts)


def inventory_parts(series: Sequence[Sample], tokens: Sequence[str]) -> tuple[Part, ...]:
    """Our position in each token over time."""
    if not series:
        return (Note("no series: inventory over time needs a series table (or a journal's fills)"),)
    pts = _thin(series)
    x = [_iso(s.t) for s in pts]
    traces = []
    for tok in tokens:
        y = [s.tokens[tok].position / UNIT if tok in s.tokens else None for s in pts]
        traces.append(_line(f"…{tok[-8:]}", x, y))
    return (Figure("fig-inventory", {"data": traces, "layout": _layout("Inventory per token", "shares")}),)


def quote_parts(results: RunResults) -> tuple[Part, ...]:
    """Per token: the book's best bid and ask, our best bid and ask over them, and our fills marked
    (triangles up for buys, down for sells; filled for maker, open for taker)."""
    parts: list[Part] = []
    pts = _thin(results.series)
    x = [_iso(s.t) for s in pts]
    for i, tok in enumerate(results.tokens):
        traces = []
        if pts:
            def col(name: str) -> list[float | None]:
                return [_usdc(getattr(s.tokens[tok], name)) if tok in s.tokens else None for s in pts]

            if any(v is not None for v in col("bid") + col("ask")):
                traces += [_line("best bid", x, col("bid"), COLORS["bid"], opacity=0.6),
                           _line("best ask", x, col("ask"), COLORS["ask"], opacity=0.6)]
            ours = {"dash": "dash", "width": 2.5}
            traces += [_line("our bid", x, col("our_bid"), COLORS["our_bid"], ours),
                       _line("our ask", x, col("our_ask"), COLORS["our_ask"], ours)]
        fills = [f for f in results.fills if f.token_id == tok]
        step = math.ceil(len(fills) / MAX_MARKERS) if fills else 1
        for side in (Side.BUY, Side.SELL):
            for maker in (True, False):
                these = [f for f in fills if f.side is side and f.is_maker is maker][::step]
                if not these:
                    continue
                traces.append(_fill_trace(these, side, maker))
        if not traces:
            continue
        title = f"Quotes and fills …{tok[-8:]}" + (f" (every {step}th fill drawn)" if step > 1 else "")
        parts.append(Figure(f"fig-quotes-{i}", {"data": traces, "layout": _layout(title, "price (USDC)")}))
    if not parts:
        return (Note("no quotes, books or fills to draw"),)
    if results.series and all(not s.tokens or all(t.bid is None and t.ask is None for t in s.tokens.values())
                              for s in results.series):
        parts.append(Note("no books in the files: only our quotes and fills are drawn"))
    return tuple(parts)


def _fill_trace(fills: list[FillRecord], side: Side, maker: bool) -> dict[str, Any]:
    symbol = ("triangle-up" if side is Side.BUY else "triangle-down") + ("" if maker else "-open")
    name = f"{'maker' if maker else 'taker'} {side.value.lower()}"
    return {
        "type": "scatter", "mode": "markers", "name": name,
        "x": [_iso(f.ts) for f in fills], "y": [f.price / UNIT for f in fills],
        "marker": {"symbol": symbol, "size": 11, "color": COLORS[side.value], "line": {"width": 1.5, "color": COLORS[side.value]}},
        "text": [f"{name} {format_units(f.size)} @ {format_units(f.price)}, fee {format_units(f.fee)}" for f in fills],
        "hovertemplate": "%{text}<extra></extra>",
    }


def _horizon(h: float) -> str:
    return f"{h:g} s"


def markout_parts(results: RunResults, horizons: Sequence[float]) -> tuple[Part, ...]:
    """Markouts by side and horizon: their distribution (box, mean marked) and the size-weighted
    means in a table (cents per share; negative is adverse selection)."""
    if not results.fills:
        return (Note("no fills: no markouts"),)
    marks = stats.markouts(results.fills, results.series, horizons)
    means = stats.markout_means(marks, horizons)
    if not any(m.fills for m in means):
        return (Note("no mid after any fill: markouts need the books (series with best bid and ask, or a recording)"),)
    traces = []
    for side in (Side.BUY, Side.SELL):
        xs, ys = [], []
        for m in marks:
            if m.fill.side is not side:
                continue
            for h, move in zip(horizons, m.moves):
                if move is not None:
                    xs.append(_horizon(h))
                    ys.append(move / 10_000)
        if ys:
            traces.append({"type": "box", "name": f"{side.value.lower()} fills", "x": xs, "y": ys,
                           "boxmean": True, "marker": {"color": COLORS[side.value]}})
    layout = _layout("Markouts: mid move after each fill, for our side", "¢ per share",
                     boxmode="group", hovermode="closest")
    layout["xaxis"] = {"type": "category", "title": {"text": "after the fill"}}
    rows = tuple((m.side.value.lower(), _horizon(m.horizon), "" if m.mean is None else f"{m.mean / 10_000:+.3f}",
                  f"{m.fills:,}") for m in means)
    return (Figure("fig-markouts", {"data": traces, "layout": layout}),
            Table("markout-table", ("side", "after", "mean ¢/share (size-weighted)", "fills"), rows))


def fill_parts(results: RunResults) -> tuple[Part, ...]:
    """How much of each accepted order filled, and how long orders waited in the queue for their
    first maker fill, by side."""
    fractions = stats.fill_fractions(results.orders)
    if not fractions:
        return (Note("no accepted orders: no fill rate or queue waits"),)
    parts: list[Part] = []
    filled = sum(1 for _, x in fractions if x > 0)
    traces = []
    for side in (Side.BUY, Side.SELL):
        xs = [x for o, x in fractions if o.side is side]
        if xs:
            traces.append({"type": "histogram", "name": f"{side.value.lower()} orders", "x": xs,
                           "xbins": {"start": -0.05, "end": 1.05, "size": 0.1}, "marker": {"color": COLORS[side.value]},
                           "opacity": 0.75})
    layout = _layout(f"Filled share of each accepted order ({len(fractions):,} orders, {filled:,} with a fill)",
                     "orders", barmode="group", hovermode="closest")
    layout["xaxis"] = {"title": {"text": "filled / size"}, "range": [-0.05, 1.05]}
    parts.append(Figure("fig-fill-rate", {"data": traces, "layout": layout}))
    waits = stats.queue_waits(results.orders, results.fills)
    if waits:
        traces = []
        for side in (Side.BUY, Side.SELL):
            xs = [w for o, w in waits if o.side is side]
            if xs:
                traces.append({"type": "histogram", "name": f"{side.value.lower()} orders", "x": xs, "nbinsx": 40,
                               "marker": {"color": COLORS[side.value]}, "opacity": 0.75})
        median = statistics.median(w for _, w in waits)
        layout = _layout(f"Queue wait to the first maker fill ({len(waits):,} orders, median {median:.2f} s)",
                         "orders", barmode="overlay", hovermode="closest")
        layout["xaxis"] = {"title": {"text": "seconds"}}
        parts.append(Figure("fig-queue-wait", {"data": traces, "layout": layout}))
    else:
        parts.append(Note("no maker fill: no queue waits"))
    return tuple(parts)


# --- HTML --------------------------------------------------------------------------------------


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#212121;background:#fafafa}
header{background:#263238;color:#eceff1;padding:16px 28px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;font-size:13px;color:#b0bec5}nav{padding:8px 28px;background:#eceff1;font-size:14px}
nav a{margin-right:16px;color:#37474f}main{padding:8px 28px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;margin:16px 0;padding:12px 18px}
h2{font-size:18px;margin:4px 0 8px}table{border-collapse:collapse;font-size:14px;margin:8px 0}
td,th{border-bottom:1px solid #eee;padding:4px 14px;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
p.note{color:#5d4037;font-size:14px;margin:6px 0}
"""


def render_html(report: Report) -> str:
    """The whole page: plotly.js embedded once, then every section."""
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    esc = html.escape
    body = []
    for sec in report.sections:
        body.append(f'<section id="{esc(sec.id)}"><h2>{esc(sec.title)}</h2>')
        for part in sec.parts:
            if isinstance(part, Figure):
                body.append(pio.to_html(part.figure, include_plotlyjs=False, full_html=False, div_id=part.id,
                                        config={"displaylogo": False, "responsive": True}, validate=True))
            elif isinstance(part, Table):
                head = "".join(f"<th>{esc(c)}</th>" for c in part.columns)
                rows = "".join(
                    "<tr>" + "".join(f'<td class="{"num" if i else ""}">{esc(v)}</td>' for i, v in enumerate(r)) + "</tr>"
                    for r in part.rows)
                body.append(f'<table id="{esc(part.id)}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>')
            else:
                body.append(f'<p class="note">{esc(part.text)}</p>')
        body.append("</section>")
    nav = "".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in report.sections)
    manifest = json.dumps(report.figure_ids).replace("<", "\\u003c")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(report.title)}</title><style>{_CSS}</style>"
        f"<script type=\"text/javascript\">{get_plotlyjs()}</script></head><body>"
        f"<header><h1>{esc(report.title)}</h1><p>{esc(report.subtitle)}</p></header><nav>{nav}</nav>"
        f"<main>{''.join(body)}</main>"
        f"<script type=\"application/json\" id=\"report-figures\">{manifest}</script></body></html>\n"
    )


def report_path(results: str | Path) -> Path:
    """Where a run's report goes by default: in its results folder, or beside its journal."""
    p = Path(results)
    return p / "report.html" if p.is_dir() else p.with_name(p.name + ".report.html")


def write_report(results: RunResults, out: str | Path) -> Path:
    """Build and write the report of ``results`` to ``out`` (an HTML file); returns its path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(render_html(build_report(results)), encoding="utf-8")
    tmp.replace(out)
    return out
