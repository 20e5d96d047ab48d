# Types for compiling router.py with Cython (pure-Python mode: router.py stays the one source).
# Names declared here must keep the meaning they have in router.py.
cimport cython

from bot.execution.diff cimport on_tick
from bot.execution.orders cimport OrderStore, OwnOrder

cdef double _NEVER, _FREE


@cython.final
cdef class _Target:
    cdef public object target, reducing, _flags, refused
    cdef public bint any_reducing


@cython.final
cdef class _PlanMemo:
    cdef public dict settled
    cdef public long long empty_targets, empty_orders, empty_quoting, drained_at
    cdef public double empty_until, wake
    cdef public object work, drained

    cpdef void forget(self) except *
    cpdef bint empty(self, long long targets_rev, OrderStore orders, double now) except -1
    cpdef bint empty_for_good(self, long long targets_rev, OrderStore orders) except -1
    cpdef void found_empty(self, long long targets_rev, OrderStore orders, double wake) except *
    cpdef object replay(self, long long targets_rev, OrderStore orders, dict targets, object tick_of)
    cpdef void found_work(self, tuple plan, double wake, long long targets_rev, OrderStore orders,
                          object ticks) except *
    cpdef void settle(self, object token, object tgt, object version, object tick) except *
    cpdef bint unchanged(self, object token, object tgt, object version, object tick) except -1


cdef class Router:
    cdef public OrderStore _orders
    cdef public object config, _sign, _place, _cancel, _tick_of
    cdef public tuple _routes
    cdef public dict _targets, _versions, _cancels, _emitted_cancels, _retry_soon
    cdef public set refusing
    cdef public list _takes
    cdef public long long _targets_rev, _prune_at
    cdef public _PlanMemo _memo

    @cython.locals(memo=_PlanMemo)
    cpdef bint settled(self)
    cpdef bint idle(self, double now)
    cdef inline bint _quiet(self, double now)
    @cython.locals(o=OwnOrder, orders=OrderStore, memo=_PlanMemo)
    cpdef void _settle_drained(self) except *
    @cython.locals(memo=_PlanMemo)
    cpdef list poll(self, double now)
    @cython.locals(o=OwnOrder, memo=_PlanMemo, until=cython.double)
    cpdef tuple _plan(self, double now)
    cpdef long long _grant(self, object throttle, long long want, double now) except -1
    cpdef object _build(self, object req, double now)
    @cython.locals(until=cython.double)
    cpdef object wakeup(self, double now)
    @cython.locals(t_cancel=cython.double, t_place=cython.double, ready=cython.double, t=cython.double)
    cpdef object next_ready(self, double now)
    @cython.locals(until=cython.double)
    cpdef double _paced_until(self, object oid) except? -1.0
    @cython.locals(wait=cython.double, d=cython.double)
    cpdef double _wait(self, object throttle, double now) except? -1.0


@cython.locals(o=OwnOrder, busy=set)
cpdef list _not_cancelling(list quotes, object working, object cancels, object tick)
