"""Charts drawn with plotext: throughput over time, per-class F1 bars, histograms."""

from __future__ import annotations

from typing import Sequence

from textual_plotext import PlotextPlot

from w2c_tui.labels import LABELS, SHORT


class ThroughputChart(PlotextPlot):
    """req/s (left axis) and running accuracy (right axis) of a session, sampled once a second."""

    DEFAULT_CSS = """
    ThroughputChart { height: 1fr; min-height: 6; }
    """
    _MAX_POINTS = 600

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.times: list[float] = []
        self.rates: list[float] = []
        self.accuracy: list[float | None] = []

    def add_sample(self, elapsed: float, requests_per_second: float, accuracy: float | None) -> None:
        self.times.append(round(elapsed, 1))
        self.rates.append(requests_per_second)
        self.accuracy.append(accuracy)
        if len(self.times) > self._MAX_POINTS:
            del self.times[0], self.rates[0], self.accuracy[0]
        self.redraw()

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if not self.times:
            plt.title("throughput: waiting for the first requests")
        else:
            plt.plot(self.times, self.rates, label="req/s", marker="braille")
            # Headroom for the legend (top left); from 0, also when nothing was sent (not −1…1).
            plt.ylim(0, max(1.0, max(self.rates)) * 1.3)
            points = [(t, a) for t, a in zip(self.times, self.accuracy) if a is not None]
            if points:
                plt.plot([t for t, _ in points], [a for _, a in points], label="accuracy", yside="right", marker="braille")
                plt.ylim(0, 1, yside="right")
            plt.xlabel("seconds")
        self.refresh()


class BarChart(PlotextPlot):
    """Grouped bars: one group per label, one bar per series (e.g. per pipeline)."""

    DEFAULT_CSS = """
    BarChart { height: 14; min-height: 8; }
    """

    def show(self, title: str, series: dict[str, Sequence[float]], groups: Sequence[str] = LABELS) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(title)
        names = [SHORT.get(g, g) for g in groups]
        if series:
            if len(series) == 1:
                (name, values), = series.items()
                plt.bar(names, list(values), label=name)
            else:
                plt.multiple_bar(names, [list(v) for v in series.values()], labels=list(series))
            # The legend sits at the top left, a row per series: room above 1 keeps it off the bars.
            plt.ylim(0, 1 + 0.15 * (len(series) + 1))
            plt.yticks([0, 0.25, 0.5, 0.75, 1.0])
        self.refresh()


def tallest_bin(values: Sequence[float], bins: int) -> int:
    """The count of the fullest of `bins` equal bins over the values' range (as plotext bins them)."""
    if not values:
        return 0
    low, high = min(values), max(values)
    width = (high - low) / bins or 1.0
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    return max(counts)


class Histogram(PlotextPlot):
    DEFAULT_CSS = """
    Histogram { height: 14; min-height: 8; }
    """

    def show(self, title: str, series: dict[str, Sequence[float]], bins: int = 20, xlabel: str = "") -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(title)
        drawn = False
        for name, values in series.items():
            if values:
                # One series needs no legend (the title names it): a legend would cover the tallest bins.
                plt.hist(list(values), bins=bins, label=name if len(series) > 1 else None)
                drawn = True
        if not drawn:
            plt.title(f"{title}: no data")
        elif len(series) > 1:
            # The legend sits at the top left, a row per series: headroom above the tallest bin keeps it off the bars.
            tallest = max(tallest_bin(values, bins) for values in series.values())
            plt.ylim(0, tallest * (1 + 0.15 * (len(series) + 1)))
        if xlabel:
            plt.xlabel(xlabel)
        self.refresh()
