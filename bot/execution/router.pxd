# Types for compiling router.py with Cython (pure-Python mode: router.py stays the one source).
# Names declared here must keep the meaning they have in router.py.
cimport cython

from bot.execution.diff cimport on_tick
from bot.execution.orders cimport OrderStore, OwnOrder

cdef double _NEVER


@cython.final
cdef class _Target:
    cdef public object target, reducing, _flags
    cdef public bint any_reducing


cdef class Router:
    cdef public OrderStore _orders
    cdef public object config, _sign, _place, _cancel, _tick_of
    cdef public tuple _routes
    cdef public dict _targets, _versions, _settled, _cancels, _emitted_cancels, _retry_soon
    cdef public list _takes
    cdef public long long _drained_at, _targets_rev, _quiet_targets, _quiet_orders, _quiet_quoting, _prune_at
    cdef public double _quiet_until, _plan_wake
    cdef public object _drained, _blocked

    cpdef bint settled(self)
    cpdef bint idle(self, double now)
    @cython.locals(orders=OrderStore)
    cdef inline bint _quiet(self, double now)
    @cython.locals(o=OwnOrder, orders=OrderStore)
    cpdef void _settle_drained(self) except *
    cpdef list poll(self, double now)
    @cython.locals(o=OwnOrder)
    cpdef tuple _plan(self, double now)
    cpdef long long _grant(self, object throttle, long long want, double now) except -1
    cpdef object _build(self, object req, double now)
    @cython.locals(t_cancel=cython.double, t_place=cython.double, ready=cython.double, t=cython.double)
    cpdef object next_ready(self, double now)
    @cython.locals(wait=cython.double, d=cython.double)
    cpdef double _wait(self, object throttle, double now) except? -1.0


@cython.locals(o=OwnOrder, busy=set)
cpdef list _not_cancelling(list quotes, object working, object cancels, object tick)
