# Types for compiling checks.py with Cython (pure-Python mode: checks.py stays the one source).
# Names declared here must keep the meaning they have in checks.py. Amounts stay Python ints
# (exact, unbounded); the types only make the projection's rows and the checker's calls direct.
cimport cython


@cython.final
cdef class _Tok:
    cdef public object pos, cost, buy_sz, buy_ntl, sell_sz, sell_ntl


cdef class Projection:
    cdef public object _positions, orders
    cdef public dict _toks

    cpdef _Tok tok(self, object token_id)
    @cython.locals(t=_Tok)
    cpdef add(self, object token_id, object side, object shares, object usdc, object sign=*)


@cython.final
cdef class _Checker:
    cdef public object state, lim, uni, books, budget, new_orders
    cdef public Projection proj
    cdef public list rejections

    cpdef bint order(self, object order, object token, object side, object price, object shares, object usdc,
                     bint resting, bint fresh) except -1
    @cython.locals(proj=Projection)
    cpdef bint shrinks(self, object token, object side) except -1
    @cython.locals(proj=Projection, y=_Tok, n=_Tok, t=_Tok)
    cpdef object _projected(self, object market, object token, object side, object shares, object usdc)


@cython.locals(proj=Projection, checker=_Checker, resting=cython.Py_ssize_t, accepted=list, reducing=list,
               targets=dict, live=dict, ok=list, kept_live=dict, lv=list)
cpdef object _decide(list intents, object state, object limits, object universe, object positions,
                     object open_orders, object books, object rate_budget)
