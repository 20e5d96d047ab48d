# Types for compiling orders.py with Cython (pure-Python mode: orders.py stays the one source).
# Names declared here must keep the meaning they have in orders.py. Prices and sizes stay Python
# ints (exact); the types make an order's fields and the store's hot reads direct.
cimport cython


cdef class OwnOrder:
    cdef public object order_id, token_id, side, price, size, order_type, expiration, state, filled
    cdef public object venue_matched, signed, before_cancel, reason, market
    cdef public list trade_ids
    cdef public bint post_only, reducing, cancel_blind
    cdef public double sent_at, updated_at, answered_at


@cython.final
cdef class OrderStore:
    cdef public dict _orders, _by_token, _working, _working_by_token, versions, quoting_versions
    cdef public list _closings
    cdef public long long revision, quoting_revision, _closing_seq, forgotten_kept
    cdef public object _forgotten

    cpdef object get(self, object order_id)
    cpdef object forgotten_token(self, object order_id)
    @cython.locals(o=OwnOrder)
    cpdef list working(self, object token_id=*)
    cpdef OwnOrder add(self, OwnOrder order)
    cpdef bint transition(self, OwnOrder order, object new, double now) except -1
    cpdef touch(self, object token_id, bint resized=*)
    @cython.locals(o=OwnOrder, n=cython.Py_ssize_t, closings=list, orders=dict)
    cpdef Py_ssize_t forget_closed(self, double before) except -1
