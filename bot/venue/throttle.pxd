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
    cpdef object ready_at(self, object n, object now)


cdef class Throttle:
    cdef public tuple windows
    cdef public object name, clock, on_wait, _sleep, _lock, capacity, waits, waited_seconds, taken
    cdef public list _logs

    cpdef _check_n(self, object n)
    @cython.locals(log=_Log)
    cpdef object ready_at(self, object n=*, object now=*)
    @cython.locals(log=_Log, room=cython.longlong)
    cpdef object available(self, object now=*)
    @cython.locals(log=_Log, logs=list)
    cpdef bint try_take(self, object n=*, object now=*) except -1
    @cython.locals(log=_Log, logs=list, room=cython.longlong)
    cpdef object take_up_to(self, object n, object now=*)
