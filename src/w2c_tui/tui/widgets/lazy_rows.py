"""Table rows built when first drawn: a RowList shows a screenful of 3,652 rows, so the cells
of the others need not be formatted to paint it (or to apply a filter)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

Item = TypeVar("Item")


class LazyRows(Sequence):
    """`[make(item) for item in items]`, each element made on first access and kept."""

    def __init__(self, items: Sequence[Item], make: Callable[[Item], Any]) -> None:
        self._items = items
        self._make = make
        self._made: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self._items):
            raise IndexError(index)
        made = self._made.get(index)
        if made is None:
            made = self._made[index] = self._make(self._items[index])
        return made
