"""Help: the keys of every screen and what the app is doing, one keypress away (?)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# w2c-tui

Runs the **When2Call** benchmark (when should a model call a tool, ask for more
information, answer directly, or decline?) against OpenAI-compatible APIs, and lets you
read every past session down to a single API call.

## Everywhere

| key | |
|---|---|
| `1` `2` `3` `4` | Setup · Monitor · Sessions · Compare |
| `ctrl+p` | command palette: every screen, session and action |
| `?` | this help |
| `escape` | back |
| `ctrl+q` | quit (running launches are cancelled; their rows stay on disk) |

## Setup

| key | |
|---|---|
| `ctrl+r` | launch with the form's settings |
| `ctrl+s` | save the form to config.toml (comments kept, tokens never written) |
| `t` / `e` / `a` / `delete` | test / edit / add / remove the highlighted provider |

Tokens belong in `.env` beside config.toml (`TOKEN_<NAME>=…`). With no provider, a
**simulated endpoint** answers: useful to try the app, never for results.

## Monitor

| key | |
|---|---|
| `c` | cancel the launch (finished rows stay; relaunch with the same run key resumes) |
| `s` | open the finished session |
| `p` | confusion matrix of the next pipeline |
| `f` | audit events: cycle the severity filter |
| `[` `]` | previous / next session |

## Sessions and a session

| key | |
|---|---|
| `enter` | open the session (tree) · open a trace (examples table) |
| `space` / `c` | mark two sessions / compare them |
| `m` `x` `g` `j` | Metrics · Examples · Charts · Manifest tabs |
| `/` `w` `f` | search · wrong only · fallback only (examples) |
| `p` | metrics of the next pipeline |

## Trace

| key | |
|---|---|
| `n` / `p` | next / previous example of the list you came from |
| `a` | expand or collapse every section |

## Compare

| key | |
|---|---|
| `enter` / `b` | trace of the example in session A / B |
| `s` | swap A and B |

Metrics: accuracy with a bootstrap 95% interval, macro-F1 over present labels (F1),
over all four labels (F1₄) and without `direct` (F1-dir); hallucination rates follow
the When2Call paper. Markers in the examples table: `judge-retry`, `judge→can`
(judge output unparsable twice), `lp→string` (all log-probabilities −inf), `lcp`
(token boundary split), `missing`, `coerced`, `api-fail`.
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90; max-width: 100%; height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [
        Binding("escape,q,question_mark", "close", "Close", id="help.close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "Help"
            scroll.border_subtitle = "escape closes"
            yield Markdown(HELP)

    def action_close(self) -> None:
        self.dismiss(None)
