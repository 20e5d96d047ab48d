# Types for compiling book.py with Cython (pure-Python mode: book.py stays the one source).
# Names declared here must keep the meaning they have in book.py.
cimport cython

cdef long long _LOW, _HIGH

@cython.final
cdef class Book:
    cdef public object token_id, market, hash, last_trade_price
    cdef public dict bids, asks
    cdef public long long tick, min_size, epoch, timestamp_ms, updates, snapshots, _other
    cdef public long long _bb, _ba, touch
    cdef public bint stale, resync

    cpdef void set_level(self, bint is_bid, long long price, object size) except *
    cpdef tuple top(self)
    cpdef bint crosses(self, bint is_buy, long long price) except -1
    cpdef Py_ssize_t _bid(self) except? -2
    cpdef Py_ssize_t _ask(self) except? -2

@cython.final
cdef class Books:
    cdef public dict _books
    cdef public long long ignored, errors
    cdef public bint track_all
    cdef public object _last
    cdef public tuple _slot_tokens
    cdef public list _slot_books

    @cython.locals(book=Book, prev_book=Book, applied=cython.Py_ssize_t, price=cython.longlong,
                   compiled=cython.bint, scache_room=cython.bint, books=dict, pcache=dict, scache=dict)
    cpdef Py_ssize_t apply_changes(self, object changes, long long timestamp_ms=*) except -1

    @cython.locals(book=Book, applied=cython.Py_ssize_t, i=cython.Py_ssize_t, n=cython.Py_ssize_t,
                   n_tokens=cython.Py_ssize_t, slot=cython.Py_ssize_t, timestamp_ms=cython.longlong,
                   tokens=tuple, hashes=tuple, packed=bytes, by_slot=list, books=dict, cols="const long long *")
    cpdef Py_ssize_t apply_levels(self, object ev) except -1

    cpdef object apply_event(self, object ev)

@cython.locals(value=cython.longlong, digits=cython.int, frac=cython.int, d=cython.int, ch=cython.Py_UCS4)
cpdef long long plain_units(str text)

cpdef long long _ms(object value) except? -1

@cython.locals(n=cython.Py_ssize_t, i=cython.Py_ssize_t, n_tokens=cython.Py_ssize_t, unit=cython.longlong,
               slot=cython.longlong, price=cython.longlong, size=cython.longlong, packed=bytes,
               cols="const long long *")
cdef const long long *level_cells(object ev) except NULL

cdef dict _TAGS

cpdef object event_type(object ev)
