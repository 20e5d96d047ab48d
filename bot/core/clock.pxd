# Types for compiling clock.py with Cython (pure-Python mode: clock.py stays the one source).
# Names declared here must keep the meaning they have in clock.py.
cimport cython


@cython.final
cdef class SimClock:
    cdef public double _now

    cpdef double now(self)
    cpdef void set(self, double ts) except *
