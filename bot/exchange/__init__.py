"""The local exchange: the venue's catalog, CLOB and account-data surfaces over HTTP and WebSocket."""

from bot.exchange.config import ExchangeConfig, load_config
from bot.exchange.server import LocalExchange, ThreadedExchange, start_in_thread

__all__ = ["ExchangeConfig", "LocalExchange", "ThreadedExchange", "load_config", "start_in_thread"]
