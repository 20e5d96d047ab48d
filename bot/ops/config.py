"""Configuration files: TOML decoded into frozen msgspec Structs that reject unknown keys.

Invariant: a config either decodes completely and validly or raises ``ConfigError`` with one line
naming the file and the offending key; secrets never come from the config file itself.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration that cannot be used, explained in one line."""


def decode_config(data: bytes | str | dict[str, Any], type_: type[T], source: str = "config") -> T:
    """Decode TOML text (or an already-parsed table) into ``type_``, strictly."""
    try:
        if isinstance(data, dict):
            return msgspec.convert(data, type=type_, strict=True)
        return msgspec.toml.decode(data, type=type_, strict=True)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc})") from None


def load_config(path: str | os.PathLike[str], type_: type[T]) -> T:
    """Read and decode a TOML config file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read ({exc.strerror})") from None
    return decode_config(raw, type_, source=str(p))


def read_owner_only(path: str | os.PathLike[str]) -> bytes:
    """Read a secrets file, refusing one that anybody but its owner can read or write."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read secrets file ({exc.strerror})") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{p}: secrets file must be readable by its owner only (chmod 600)")
    return p.read_bytes()
