"""The connection test of one provider (GET /models, a chat call, log-probabilities, …) and its result."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.markup import escape
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from w2c_tui.tui.background import background

if TYPE_CHECKING:
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import ProviderSettings
    from w2c_tui.api.probe import ProbeResult


def model_for(loaded: LoadedConfig, models: list[str], name: str) -> str | None:
    """The first of `models` (the form's targets, then its judge) that provider `name` serves,
    to try the chat and logprobs calls with; None lets the probe ask /models."""
    from w2c_tui.api.providers import route
    from w2c_tui.engine.endpoint import api_providers

    try:
        providers = api_providers(loaded)
        for model in models:
            if model and route(model, providers).name == name:
                return model
    except Exception:  # noqa: BLE001 - the probe then asks /models which model to use
        return None
    return None


class ConnectionTest(Static):
    """Runs the tests and shows the last one; keeps every provider's last result in `probes`.

    Says `Tested` when a test ends, passed, failed or broken (`error`: the test's own failure)."""

    class Tested(Message):
        def __init__(self, name: str, result: ProbeResult | None) -> None:
            super().__init__()
            self.name = name
            self.result = result

    def __init__(self) -> None:
        super().__init__(id="probe-detail")
        self.probes: dict[str, ProbeResult] = {}
        self.error = ""  # the last connection test's own failure (not a server's answer)

    def test(self, name: str, provider: ProviderSettings, model: str | None) -> None:
        self.update(Content.from_markup(f"[$text-muted]testing {escape(name)}…[/]"))
        self._probe(name, provider.base_url, provider.token or None, model)

    @background(group="probe")
    async def _probe(self, name: str, base_url: str, token: str | None, model: str | None) -> None:
        from w2c_tui.api.probe import probe_provider  # httpx and the client load on the first test, not at start

        result = await probe_provider(name, base_url, token, model)
        self.probes[name] = result
        self.error = ""
        self.post_message(self.Tested(name, result))
        details = "\n".join(
            f"{'[$success]✓' if c.ok else '[$error]✗'} {check}[/] [dim]{escape(c.detail)}[/]"
            for check, c in result.checks.items()
        )
        self.update(Content.from_markup(f"[b]{escape(name)}[/b]\n{details}"))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.group == "probe":
            self.update(f"test failed: {event.worker.error}")
            self.error = str(event.worker.error)[:80]
            self.post_message(self.Tested("", None))
