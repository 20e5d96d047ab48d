"""Live trading: the async shell around the synchronous core, ``bot run`` and ``bot demo``."""
