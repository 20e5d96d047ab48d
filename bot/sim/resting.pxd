# Types for compiling resting.py with Cython (pure-Python mode: resting.py stays the one source).
# Names declared here must keep the meaning they have in resting.py.
cimport cython


@cython.final
cdef class OwnBook:
    cdef public dict bids, asks
    cdef public long long top_bid, top_ask
