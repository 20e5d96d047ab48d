# Types for compiling market_maker.py with Cython (pure-Python mode: market_maker.py stays the one
# source). Names declared here must keep the meaning they have in market_maker.py.
cimport cython

cpdef object floor_to_grid(object price, object tick)
cpdef object ceil_to_grid(object price, object tick)
cpdef object fair_price(object book, object kind)
cpdef object quote(object book, object inventory, object params, object now)
cpdef bint should_requote(object current, object target, object tick, object threshold_ticks) except -1
