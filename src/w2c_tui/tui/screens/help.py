"""Help: the keys of every screen and what the markers mean, one keypress away (?)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = (
    "Runs the [b]When2Call[/b] benchmark (should a model call a tool, ask for missing information, "
    "answer directly, or decline?) against OpenAI-compatible APIs, and lets you read every past "
    "session down to a single API call."
)

SECTIONS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Everywhere",
        [
            ("1 2 3 4", "Setup · Monitor · Sessions · Compare"),
            ("ctrl+p", "command palette: every screen, session and action"),
            ("?", "this help"),
            ("escape", "back to where you came from: dialog, trace, session, tab"),
            ("ctrl+q", "quit; asks first about unsaved edits or a running launch"),
            ("a-z 0-9", "act only when no text field has focus (in one they are typed)"),
            ("↑↓ k j", "move in a list · enter opens the row"),
            ("pgup pgdn", "a page up / down in a list"),
            ("home end", "first / last row of a list"),
        ],
    ),
    (
        "Setup",
        [
            ("ctrl+r", "launch with the form's settings"),
            ("ctrl+s", "save to config.toml (comments kept, tokens never written)"),
            ("ctrl+z", "undo the last edit of the form (a field, a provider)"),
            ("f6 ⇧f6", "next / previous panel (⇧f6 is shift+f6)"),
            ("enter", "provider editor: apply to the form (ctrl+s: and save)"),
            ("space", "provider editor: tick or untick default provider"),
            ("t e a del", "test / edit / add / remove the highlighted provider"),
            ("j", "check judge: the judge labels every reference answer"),
            ("escape", "leave a text field, so that the letter keys act"),
        ],
    ),
    (
        "Monitor",
        [
            ("c", "cancel the launch; relaunch with the same run key to resume"),
            ("s", "open the finished session"),
            ("p", "confusion matrix of the next pipeline"),
            ("f", "audit events: cycle the severity filter"),
            ("[ ] ↑↓", "previous / next launch in the list"),
        ],
    ),
    (
        "Sessions and one session",
        [
            ("enter", "open the session (tree) · open a trace (examples)"),
            ("space m c", "mark two sessions · compare them"),
            ("o r", "open the highlighted session · read the list from disk again"),
            ("delete", "delete the session's folder (asks first)"),
            ("m x a g j", "Metrics · Examples · Agreement · Charts · Manifest"),
            ("e", "export tables to exports/: Markdown, LaTeX, per-example CSV"),
            ("/ w f c", "examples: search · wrong only · fallback only · clear all"),
            ("p", "metrics of the next pipeline"),
        ],
    ),
    ("Trace", [("n p", "next / previous example of the list you came from"), ("a", "expand or collapse everything")]),
    (
        "Compare",
        [
            ("enter b", "trace in session A / in session B"),
            ("s", "swap A and B"),
            ("e", "export the comparison and both sessions' tables to exports/"),
            ("r", "read the lists of sessions again"),
            ("p", "prefer: the judge compares B's llm_judge answers with A's"),
        ],
    ),
]

NOTES = (
    "[b]Metrics[/b]  accuracy with a bootstrap 95% interval; macro-F1 over the labels present (F1), "
    "over all four (F1₄) and without direct (F1-dir); hallucination rates as in the When2Call paper.\n"
    "[b]Markers[/b]  judge-retry · unreadable (judge unparsable twice: left out; unread→can: scored "
    "cannot_answer) · lp→string (every log-probability "
    "−inf) · lcp (token boundary split) · missing · coerced · api-fail.\n"
    "[b]Simulated endpoint[/b]  without a provider, launches use a built-in pseudo-model: for trying "
    "the app, never for results."
)


def help_markup() -> str:
    lines = [INTRO, ""]
    for title, keys in SECTIONS:
        lines.append(f"[b $accent]{escape(title)}[/]")
        lines.extend(f"  [b]{escape(key):<10}[/b] {escape(text)}" for key, text in keys)
        lines.append("")
    lines.append(NOTES)
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 96; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    HelpScreen Static { height: auto; }
    """
    BINDINGS = [
        Binding("escape,q,question_mark", "close", "Close", id="help.close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "w2c-tui help"
            scroll.border_subtitle = "escape closes"
            yield Static(Content.from_markup(help_markup()))

    def action_close(self) -> None:
        self.dismiss(None)
