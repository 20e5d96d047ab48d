# Types for compiling venue.py with Cython (pure-Python mode: venue.py stays the one source).
# Names declared here must keep the meaning they have in venue.py.
cimport cython

from bot.core.book cimport level_cells
from bot.execution.orders cimport OwnOrder
from bot.sim.depth cimport Depth
from bot.sim.resting cimport OwnBook


@cython.final
cdef class _Token:
    cdef public object token, info, outcome, fee
    cdef public Depth depth
    cdef public OwnBook own


@cython.final
cdef class SimVenue:
    cdef public object config, _latency, _queue, books, ledger, account, _acct_id, _owner, _fee_account
    cdef public object rng, _prefix, settlement, _closed
    cdef public dict _tokens, _records, _hot, _orders
    cdef public list _work, _out
    cdef public long long _ntrades, _seq, _oseq
    cdef public bint _apply, _paper, _cross
    cdef public double _window, now

    cpdef object next_due(self)
    cpdef list due(self, double now)
    @cython.locals(ta=object)
    cpdef execute(self, list actions, double now)
    cpdef on_market(self, object event, double now)
    cpdef place(self, object batch, double now)
    cpdef cancel(self, object batch, double now)
    cpdef cancel_all(self, double now)
    @cython.locals(tok=_Token, is_bid=cython.bint, n=cython.Py_ssize_t, i=cython.Py_ssize_t, px=cython.longlong,
                   tokens=tuple, cols="const long long *")
    cpdef _price_change(self, object event, double now)
    @cython.locals(own=OwnBook)
    cpdef bint _wanted(self, _Token tok, bint is_bid, long long price) except -1
    cpdef void _push_work(self, double t, int kind, object payload) except *
    cpdef void _answer(self, double t, object result) except *
    @cython.locals(tok=_Token)
    cpdef void _recheck(self, object token) except *
    @cython.locals(trades=list)
    cpdef void _arrive_places(self, object batch, double t) except *
    @cython.locals(tok=_Token, depth=Depth)
    cpdef object _arrive(self, OwnOrder o, double t, list trades)
    cpdef void _arrive_cancels(self, object batch, double t) except *
    cpdef void _remove(self, object order, object status) except *
    cpdef void _remember_closed(self, object oid) except *
    cpdef void _rest(self, object order, _Token tok, double t) except *


@cython.locals(depth=Depth)
cpdef dict _capture(object captured, _Token tok, bint is_bid, object price, object size)
