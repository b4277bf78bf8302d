"""The configured providers, each with its URL, token status and tested capabilities."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from textual.content import Content
from textual.markup import escape
from textual.widgets import OptionList
from textual.widgets.option_list import Option

if TYPE_CHECKING:  # the probe brings httpx, the schema pydantic; the first screen paints without them
    from w2c_tui.config.schema import ProviderSettings
    from w2c_tui.api.probe import ProbeResult

SIMULATED_ID = "__simulated__"


def describe_provider(name: str, provider: ProviderSettings, token_variable: str, probe: ProbeResult | None) -> Content:
    from w2c_tui.api.providers import is_loopback_url

    if provider.token:
        token = f"[$success]token ✓[/] [dim]{escape(token_variable)}[/]"
    elif is_loopback_url(provider.base_url):  # a server on this machine: requests go without one
        token = "[dim]no token needed (loopback)[/]"
    else:
        token = f"[$warning]no token[/] [dim]set {escape(token_variable)} in .env[/]"
    prefixes = ", ".join(provider.model_prefixes) or ("default" if provider.default else "catch-all")
    # The default provider said in words, before the URL a narrow panel cuts.
    default = " [b $accent]default[/]" if provider.default else ""
    lines = [
        f"[b]{escape(name)}[/b]{default}  [dim]{escape(provider.base_url)}[/]",
        f"  {token}  [dim]models:[/] {escape(prefixes)}  [dim]×{provider.max_concurrency}[/]",
    ]
    if probe is not None:
        marks = [
            f"[$success]✓ {check}[/]" if result.ok else f"[$error]✗ {check}[/]" for check, result in probe.checks.items()
        ]
        lines.append("  " + "  ".join(marks))
    else:
        lines.append("  [dim]not tested: press t[/]")
    return Content.from_markup("\n".join(lines))


class ProviderList(OptionList):
    DEFAULT_CSS = """
    ProviderList { height: auto; max-height: 14; border: none; padding: 0; background: transparent; }
    """

    def show(
        self,
        providers: Mapping[str, ProviderSettings],
        token_variables: Mapping[str, str],
        probes: Mapping[str, ProbeResult],
    ) -> None:
        highlighted = self.highlighted_option.id if self.highlighted_option is not None else None
        self.clear_options()
        if not providers:
            self.add_option(
                Option(
                    Content.from_markup(
                        "[b $warning]simulated endpoint[/] [dim](no provider)[/]\n"
                        "  [dim]built-in pseudo-model, loopback only[/]\n"
                        "  [dim]a: add a real provider[/]"
                    ),
                    id=SIMULATED_ID,
                )
            )
            return
        for name, provider in providers.items():
            self.add_option(Option(describe_provider(name, provider, token_variables.get(name, ""), probes.get(name)), id=name))
        names = list(providers)
        self.highlighted = names.index(highlighted) if highlighted in names else 0

    @property
    def selected_name(self) -> str | None:
        option = self.highlighted_option
        if option is None or option.id == SIMULATED_ID:
            return None
        return option.id
