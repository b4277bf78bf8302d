"""Readable configuration errors and where in the file they point."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, Iterable


class ConfigError(ValueError):
    """One readable message naming the file, the line or key, and what to do."""


def nearest(name: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"']+)\s*=")


def locate(text: str, loc: tuple[Any, ...]) -> int | None:
    """Line number (1-based) of the key at `loc` ("models", "target_model") in TOML text.

    A light scan of headers and keys, good enough to point a user at the right line; it
    returns None when the key is not written in the file (a default, or an inline table).
    """
    parts = [str(p) for p in loc if not isinstance(p, int)]
    if not parts:
        return None
    key = parts[-1]
    section_names = {".".join(parts[:i]) for i in range(1, len(parts))}
    current = ""
    fallback = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = header.group(1).replace('"', "").replace("'", "").replace(" ", "")
            if current == ".".join(parts):
                fallback = number
            continue
        match = _KEY.match(line)
        if match and match.group(1).strip("\"'") == key:
            if current in section_names or (not current and len(parts) == 1):
                return number
            if current == ".".join(parts[:-1]):
                return number
    return fallback


def where(path: Path | None, text: str | None, loc: tuple[Any, ...]) -> str:
    """'config.toml:12 [models] target_model' or the parts that are known."""
    dotted = ".".join(str(p) for p in loc)
    if path is None:
        return f"setting {dotted}"
    line = locate(text or "", loc)
    return f"{path}:{line} ({dotted})" if line else f"{path} ({dotted})"
