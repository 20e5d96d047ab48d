# Types for compiling book.py with Cython (pure-Python mode: book.py stays the one source).
# Names declared here must keep the meaning they have in book.py.
cimport cython


@cython.final
cdef class Level:
    cdef public object price, orders, total


@cython.final
cdef class Book:
    cdef public object token, market, outcome, last_trade_price, last_trade_side, state
    cdef public Book comp
    cdef public dict bids, asks
    cdef public list bid_prices, ask_keys
