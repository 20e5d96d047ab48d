# Types for compiling diff.py with Cython (pure-Python mode: diff.py stays the one source).
# Names declared here must keep the meaning they have in diff.py.
cimport cython

cpdef tuple diff(object targets, object live_orders, object tick, object size_tolerance=*)
cpdef object on_tick(object price, object tick)
