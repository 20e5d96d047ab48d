# Types for compiling accounts.py with Cython (pure-Python mode: accounts.py stays the one source).
# Names declared here must keep the meaning they have in accounts.py.
cimport cython


@cython.final
cdef class Account:
    cdef public object id, collateral, reserved
    cdef public dict tokens, reserved_tokens, open_orders
    cdef public list trade_ids


@cython.final
cdef class Ledger:
    cdef public dict accounts, pairs, airdropped
    cdef public object funded
