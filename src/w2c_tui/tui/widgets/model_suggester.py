"""Model-name completion for inputs that may hold a comma-separated list of models."""

from __future__ import annotations

from typing import Iterable

from textual.suggester import Suggester


class ModelSuggester(Suggester):
    """Completes the last name in the input from the known models; free text stays allowed."""

    def __init__(self, models: Iterable[str] = ()) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.models: list[str] = []
        self.add(models)

    def add(self, models: Iterable[str]) -> None:
        for model in models:
            if model and model not in self.models:
                self.models.append(model)

    async def get_suggestion(self, value: str) -> str | None:
        head, sep, last = value.rpartition(",")
        typed = last.lstrip()
        if not typed:
            return None
        lowered = typed.lower()
        for model in self.models:
            if model.lower().startswith(lowered) and model != typed:
                return f"{head}{sep}{last[: len(last) - len(typed)]}{model}"
        return None
