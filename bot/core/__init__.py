"""The synchronous deterministic core: events, clock, books, intents, the engine loop."""
