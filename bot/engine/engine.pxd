# Types for compiling engine.py with Cython (pure-Python mode: engine.py stays the one source).
# Names declared here must keep the meaning they have in engine.py.
cimport cython

from bot.core.book cimport Book, Books, event_type
from bot.core.feed cimport Feed
from bot.core.touch cimport net_touch, own_levels
from bot.execution.orders cimport OrderStore
from bot.execution.reconciler cimport Reconciler
from bot.execution.router cimport Router


@cython.final
cdef class Engine:
    cdef public object config, strategy, markets, clock, risk, portfolio, metrics
    cdef public Reconciler reconciler
    cdef public Books books
    cdef public Feed feed
    cdef public object perf, daily, opening_marks, latencies, recent_fills, ctx, _orphans_seen, warnings
    cdef public EngineStats stats
    cdef public object _watched
    cdef public Router router
    cdef public dict settlement, _tops, _handlers, _marks
    cdef public bint stopped, _prints
    cdef public dict _ticks
    cdef public bint stamp_sends, own_orders_shown
    cdef public object drifts, _drifts_before, _drift_shown, blocked
    cdef public long long verifying, _trades_pages

    @cython.locals(orders=OrderStore)
    cpdef object net_touch(self, object token_id)
    @cython.locals(router=Router)
    cpdef object next_wakeup(self)
    @cython.locals(tracked=dict, books=Books, feed=Feed, ticks=dict, changed=list, intents=list, publish=cython.bint,
                   n=Py_ssize_t, i=Py_ssize_t, runs=cython.longlong)
    cpdef list on_market(self, list events, object received=*)
    cpdef list on_result(self, object result)
    cpdef list on_timer(self)
    cpdef list poll(self)
    @cython.locals(router=Router)
    cpdef list _poll(self)
    cpdef list _run(self, object intents, bint checked=*)
    @cython.locals(book=Book, mark=cython.longlong)
    cpdef object _on_book(self, object token_id)
    cpdef list _outputs(self, object outputs, bint poll=*)


@cython.final
cdef class EngineStats:
    cdef public long long orders_sent, orders_accepted, orders_rejected, cancels_sent, canceled, fills
    cdef public long long reversals, volume, notional, rate_limited, send_errors, risk_rejections
    cdef public long long book_events, halts, reconnects, orphans
    cdef public long long book_runs, requotes_shed, unbooked
