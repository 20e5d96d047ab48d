# Types for compiling throttle.py with Cython (pure-Python mode: throttle.py stays the one source).
# Names declared here must keep the meaning they have in throttle.py.
cimport cython


@cython.final
cdef class _Log:
    cdef public object entries
    cdef public long long used, capacity
    cdef public double seconds, oldest, _free_stamp, _free_at

    cpdef prune(self, double now)
    cpdef add(self, double t, long long n)
    cpdef long long room(self, double now)


cdef class Throttle:
    cdef public tuple windows
    cdef public object name, clock, on_wait, _sleep, _lock, capacity, waits, waited_seconds, taken
    cdef public list _logs
