"""Per-pipeline progress of a running session: bar, done/total, rate, ETA, accuracy, F1."""

from __future__ import annotations


from textual.content import Content
from textual.markup import escape
from textual.widget import Widget

from w2c_tui.report.numbers import clock, ratio
from w2c_tui.session.live import PipelineProgress
from w2c_tui.status import COMPLETE, FAILED
from w2c_tui.tui.formatting import STATUS_COLOUR, bar, short_exp



class ProgressTable(Widget):
    DEFAULT_CSS = """
    ProgressTable { height: auto; min-height: 1; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._pipelines: dict[str, PipelineProgress] = {}
        self.idle_text = ""  # shown instead of "preparing" once the launch has ended without pipelines

    def update_pipelines(self, pipelines: dict[str, PipelineProgress]) -> None:
        changed = len(pipelines) != len(self._pipelines)
        self._pipelines = pipelines
        if changed:
            self.refresh(layout=True)
        else:
            self.refresh()

    def get_content_height(self, container, viewport, width: int) -> int:
        return max(1, len(self._pipelines))

    def render(self) -> Content:
        if not self._pipelines:
            return Content.from_markup(
                f"[$text-muted]{escape(self.idle_text or 'preparing: loading data and checking providers…')}[/]"
            )
        width = self.content_region.width or 80
        long_names = width >= 110
        names = {n: (n if long_names else short_exp(n)) for n in self._pipelines}
        name_width = min(max(len(n) for n in names.values()), 30)
        # Measure a row drawn with an empty bar; the bar takes whatever width is left.
        sample = next(iter(self._pipelines.values()))
        fixed = len(Content.from_markup(self._line(sample, "", name_width, 0)).plain)
        bar_width = max(6, width - fixed)
        lines = [self._line(p, names[n], name_width, bar_width) for n, p in self._pipelines.items()]
        if width - fixed < 6:
            # Narrow terminal: drop the rate column rather than the scores.
            fixed = len(Content.from_markup(self._line(sample, "", name_width, 0, with_rate=False)).plain)
            bar_width = max(4, width - fixed)
            lines = [self._line(p, names[n], name_width, bar_width, with_rate=False) for n, p in self._pipelines.items()]
        return Content.from_markup("\n".join(lines))

    def _line(self, p: PipelineProgress, name: str, name_width: int, bar_width: int, with_rate: bool = True) -> str:
        done, total, failed = p.done, p.total, p.failed
        status = str(p.status)
        filled, empty = bar(done, total, bar_width)
        colour = "$success" if status == COMPLETE else "$error" if status == FAILED else "$accent"
        counts = f"{done:>5}/{total:<5}"
        counts += f" [$error]{('✗' + str(failed))[:4]:<4}[/]" if failed else "     "
        if status == "running":
            rate = f"{p.rate or 0:4.1f} ex/s"
            when = f"ETA {clock(p.eta_seconds)}" if p.eta_seconds is not None else ""
        else:
            rate = ""
            when = f"[{STATUS_COLOUR.get(status, '$text')}]{escape(status)}[/]"
        rate_column = f" {rate:>10}" if with_rate else ""
        return (
            f"{escape(name[:name_width]):<{name_width}} [{colour}]{filled}[/][$text-muted]{empty}[/] "
            f"{counts}{rate_column} {_pad(when, 10)} acc {ratio(p.accuracy):>4}  F1 {ratio(p.macro_f1):>4}"
        )


def _pad(markup: str, width: int) -> str:
    visible = len(Content.from_markup(markup).plain)
    return markup + " " * max(0, width - visible)
