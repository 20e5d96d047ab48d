"""Every wire shape of the venue as a msgspec Struct, with typed decoders.

Import from here: ``from bot.venue.models import OrderBook, decode, decode_market_frame``.
Decode REST bodies with ``decode(data, Model)`` (bytes) or ``convert(obj, Model)`` (parsed JSON);
any mismatch raises :class:`DecodeError` naming the model and field. Encode with ``encode(model)``
(or ``msgspec.json.encode``): field names are the venue's, unset optional fields are omitted.
"""

from .account import (
    DataPosition, DataPositionV2, DataTrade, DataTradeV2, Holder, HolderGroup, HolderGroupV2, HolderV2,
)
from .bodies import (
    ACCEPTED_ORDER_STATUSES, END_CURSORS, FIRST_CURSOR, ApiCreds, BalanceAllowance, BanStatus,
    CancelResult, ErrorBody, FeeRateResponse, Heartbeat, HistoryPoint, LastTradePrice, MarketByToken,
    MidpointResponse, NegRiskResponse, OrderResult, OrderSubmission, Page, PriceHistory, PriceMap,
    PriceResponse, SignedOrder, SpreadResponse, TickSizeResponse, TokenPrices, VersionResponse,
)
from .book import BookHistory, Level, OrderBook
from .catalog import (
    CatalogEvent, CatalogMarket, Comment, EventCreator, EventSummary, Profile, ProfilePosition,
    SearchPagination, SearchResponse, Series, Tag, str_list,
)
from .decoding import DecodeError, FastWire, Wire, convert, decode, encode, json_decoder, to_builtins
from .markets import (
    ClobMarket, ClobMarketInfo, ClobToken, FeeDetails, InfoToken, MarketEventRef, Number,
    RewardRate, Rewards, SamplingMarket, SamplingSimplifiedMarket, SimplifiedMarket, number_text,
)
from .numeric import NumericWire, WireDecimal, WireInt
from .orders import LiveOpenOrder, OpenOrder, OrderEnvelope, decode_order_lookup
from .rtds import RtdsMessage, RtdsPayload, RtdsPoint
from .timestamps import epoch_ms
from .trade import MakerOrder, Trade
from .ws import (
    MARKET_EVENT_TYPES, USER_EVENT_TYPES, BestBidAskEvent, BookEvent, EventMessage,
    LastTradePriceEvent, LevelChange, MarketEvent, MarketResolvedEvent, MarketSubscribe,
    NewMarketEvent, OrderEvent, PriceChangeEvent, SubscriptionUpdate, TickSizeChangeEvent,
    TradeEvent, UserEvent, UserSubscribe, decode_market_frame, decode_user_frame, encode_event,
    encode_frame, legacy_price_change,
)

__all__ = [name for name in dir() if not name.startswith("_") and name not in {
    "account", "bodies", "book", "catalog", "decoding", "markets", "numeric", "orders", "rtds", "timestamps",
    "trade", "ws",
}]
