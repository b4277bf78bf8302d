"""The code of a pipeline kind, loaded from the import paths its registry entry names.

The registry (`w2c_tui.store.kinds`) lives below the pipelines and holds only data; the
pipelines layer is the lowest allowed to import pipeline modules, so "module:attribute"
references are resolved here (by the engine, and by a sweep for its method's runs).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from w2c_tui.store.kinds import Kind, Ref


@cache
def _load(path: str) -> Any:
    module, _, attribute = path.partition(":")
    if not attribute:
        raise ValueError(f"kind reference {path!r} is not 'module:attribute'")
    return getattr(importlib.import_module(module), attribute)


def resolve(ref: Ref) -> Any:
    """The object a registry entry names: an import path is imported, an object is itself."""
    return _load(ref) if isinstance(ref, str) else ref


def pipeline_class(kind: Kind) -> type:
    return resolve(kind.pipeline)
