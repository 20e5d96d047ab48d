# Types for compiling depth.py with Cython (pure-Python mode: depth.py stays the one source).
# Names declared here must keep the meaning they have in depth.py.
cimport cython


@cython.final
cdef class Depth:
    cdef public object book
    cdef public dict gone
    cdef public Depth comp

    cpdef object feed(self, bint is_bid, object price)
    cpdef object visible(self, bint is_bid, object price)
    cpdef refresh(self, bint is_bid, object price)
