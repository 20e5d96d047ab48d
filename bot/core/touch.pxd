# Types for compiling touch.py with Cython (pure-Python mode: touch.py stays the one source).
# Names declared here must keep the meaning they have in touch.py.
cimport cython


@cython.locals(out=list)
cpdef list own_levels(object token_orders, object complement_orders=*)

@cython.locals(mine=object, left=object)
cpdef tuple _best_net(dict levels, dict own, object best, bint bids)

@cython.locals(bids_own=dict, asks_own=dict, side=dict, is_bid=cython.bint)
cpdef object net_touch(object book, object own=*, bint shown=*)
