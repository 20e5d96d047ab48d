"""Strategies shipped with the framework, one module each."""
