"""Command palette (ctrl+p): every screen, every session on disk, and the main actions."""

from __future__ import annotations

from functools import partial
from typing import Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider


class W2cCommands(Provider):
    """Screens and actions, plus 'open' and 'compare' for each known session."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = self.app
        commands: list[tuple[str, str, Callable[[], object]]] = [
            ("Setup", "providers, models, pipelines, data; launch", partial(app.switch_mode, "setup")),
            ("Monitor", "running and finished launches", partial(app.switch_mode, "monitor")),
            ("Sessions", "browse every session under the workdir", partial(app.switch_mode, "sessions")),
            ("Compare", "two sessions side by side", partial(app.switch_mode, "compare")),
            ("Launch", "run the Setup form's settings (ctrl+r on Setup)", app.action_launch_from_setup),
            ("Save config", "write the Setup form to config.toml", app.action_save_from_setup),
            ("Reload sessions", "scan the workdir again", app.action_reload_sessions),
            ("Help", "keys and concepts", app.action_help),
        ]
        for record in app.workspace.launches:
            if record.active:
                commands.append(
                    (f"Cancel launch {record.number}", f"{record.launch.run_key}: stop sending, keep finished rows", record.cancel)
                )
        for info in app.workspace.known_sessions:
            root = str(info.paths.root)
            title = f"{info.target_model} · {info.run_key}/{info.fingerprint[:10]}"
            commands.append((f"Open session {title}", f"{info.status}, n={info.n_examples}", partial(app.open_session, root)))
            commands.append((f"Compare with {title}", "as session B against the current A", partial(app.open_compare, None, root)))
        return commands

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands()[:8]:
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
