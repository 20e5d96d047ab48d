# Types for compiling matching.py with Cython (pure-Python mode: matching.py stays the one source).
# Names declared here must keep the meaning they have in matching.py.
cimport cython

from bot.sim.accounts cimport Account, Ledger
from bot.sim.book cimport Book, Level

cdef object BUY, SELL, GTC, GTD, FOK, LIVE, MATCHED, FAILED
cdef long long _NONE, _NO_STOP
cdef Py_ssize_t _SPARE_LEVELS


@cython.final
cdef class MarketState:
    cdef public object info, fee, min_size, fee_bps, fee_rate
    cdef public long long tick
    cdef public Book yes, no
    cdef public bint accepting


@cython.final
cdef class MatchingEngine:
    cdef public object config, rng, settlement, now, _id_prefix, _fee_account, _default_fee
    cdef public Ledger ledger
    cdef public dict _accounts, markets, _state, _books, _comp, _outcome, orders, trades
    cdef public dict _level_changes, _external
    cdef public list _expiry, _outbox, _spare
    cdef public set _dirty
    cdef public long long _seq, _trade_count, _calm_lo, _calm_hi
    cdef public bint _events, _mirror, post_only_mode, _settle

    @cython.locals(book=Book, comp=Book, ms=MarketState, acct=Account, orders=dict, expiry=list,
                   levels=dict, keys=list, level=Level, events=cython.bint, crosses=cython.bint,
                   ak=list, cb=list, bp=list, ck=list, tick=cython.longlong, px=cython.longlong,
                   seq=cython.longlong, ntrades=cython.Py_ssize_t, unit=cython.longlong,
                   key=cython.longlong, rt=dict, spare=list)
    cpdef object place(self, object req, object now)

    @cython.locals(buy=cython.bint, events=cython.bint, slow=cython.bint, take_own=cython.bint,
                   maker_buys=cython.bint, ntrades=cython.Py_ssize_t, accounts=dict,
                   own_keys=list, comp_keys=list, own_levels=dict, comp_levels=dict, level=Level,
                   other=Level, mbook=Book, macct=Account, taker=Account, mt=dict, tt=dict,
                   makers=list, otids=list, ttids=list, ids=list, all_trades=dict, ms=MarketState,
                   a=cython.longlong, e=cython.longlong, px=cython.longlong, tpx=cython.longlong,
                   mprice=cython.longlong, stop_seq=cython.longlong, mseq=cython.longlong, n=cython.longlong,
                   unit=cython.longlong, pairs_of=dict, spend=cython.bint, spare=list)
    cpdef Py_ssize_t _match(self, object order, Book book, Book comp, long long limit, object budget,
                            object now) except -1

    cpdef _close(self, object trade, object order, object cash, object shares, object pairs,
                 object now)
    cpdef _check_tick(self, MarketState ms, object now)
