"""The exchange's interface and nothing else: models, clients, auth, signing, streams, limits."""
