# Types for compiling feed.py with Cython (pure-Python mode: feed.py stays the one source).
# Names declared here must keep the meaning they have in feed.py.
cimport cython


@cython.final
cdef class Feed:
    cdef public object config, budget, rest_applied, rest_dropped, rest_errors, polls
    cdef public dict tokens

    cpdef on_update(self, object token_id, object now)
