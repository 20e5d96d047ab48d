# Types for compiling timeline.py with Cython (pure-Python mode: timeline.py stays the one source).
# Names declared here must keep the meaning they have in timeline.py.
cimport cython
from cpython.long cimport PyLong_AsLongLongAndOverflow

from bot.core.clock cimport SimClock
from bot.engine.engine cimport Engine
from bot.sim.venue cimport SimVenue

cdef double _INF
cdef dict _SPECIAL, _IN_MS
cdef frozenset _SHARED_KINDS


@cython.locals(c=cython.longlong, over=cython.int)
cpdef double divided(object n, double unit) except? -1.0

@cython.locals(in_ms=object, t=cython.double)
cpdef double exchange_time(object ev, double received) except? -1.0

cpdef bint _is_record(object cls) except -1


@cython.final
cdef class Backtest:
    cdef public Engine engine
    cdef public SimVenue venue
    cdef public SimClock clock
    cdef public object on_sample, venue_view, first_t, last_t, _pending
    cdef public double timer_s, _next_timer
    cdef public bint feed_delay, _shared
    cdef public long long events, _share_at

    @cython.locals(n=cython.longlong, t=cython.double, at=cython.double, started=cython.bint,
                   feed_delay=cython.bint, venue=SimVenue, eng=Engine, clock=SimClock)
    cpdef run(self, object events, object progress=*)
    @cython.locals(eng=Engine, venue=SimVenue, t=cython.double, kind=cython.int, clock=SimClock)
    cpdef void _advance(self, double until, bint drain=*) except *
    cpdef void _dispatch(self, list actions) except *
