# Types for compiling reconciler.py with Cython (pure-Python mode: reconciler.py stays the one
# source). Names declared here must keep the meaning they have in reconciler.py.
cimport cython

from bot.execution.orders cimport OrderStore, OwnOrder


@cython.final
cdef class Reconciler:
    cdef public object config, _journal, _held, orphans_unknown, orphans_closed
    cdef public OrderStore orders
    cdef public dict _trades, _held_by_order, cursors, fees, unbooked
    cdef public list _settled
    cdef public bint updates, cursor_held

    @cython.locals(o=OwnOrder, known=OwnOrder)
    cpdef list on_places_sent(self, object orders, object now)
    @cython.locals(o=OwnOrder)
    cpdef list on_cancels_sent(self, object order_ids, object now)
    cpdef list on_acks(self, object order_ids, object results, object now)
    @cython.locals(o=OwnOrder)
    cpdef _apply_ack(self, object oid, object r, object now, list out)
    @cython.locals(o=OwnOrder)
    cpdef list on_cancel_result(self, object result, object now, object requested=*)
    @cython.locals(o=OwnOrder)
    cpdef list _revert_cancels(self, object order_ids, object now)
    cpdef _close(self, OwnOrder o, object now, list out)
    cpdef _claim_held(self, object order_id, object now, list out)
    cpdef _changed(self, OwnOrder o, list out, bint resized=*)
    cpdef _commit(self)
