"""Bar-chart data for the year histograms (drawn with CSS by the `year_chart` template macro)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from searchsvc.domain.query import FacetValue

# A continuous axis is clearer (gaps show as gaps) until it gets too long to read.
MAX_CONTINUOUS_YEARS = 40
HEIGHT_STEP = 5


@dataclass(frozen=True, slots=True)
class Bar:
    year: int
    count: int
    percent: float  # height relative to the tallest bar, 0-100
    selected: bool = False

    @property
    def height_step(self) -> int:
        """The height in steps of 5% (style.css has a class per step: the pages' security
        policy allows no inline style)."""
        return int(round(self.percent / HEIGHT_STEP) * HEIGHT_STEP)


def year_bars(values: Iterable[FacetValue]) -> list[Bar]:
    """One bar per year, oldest first; years without records in between get empty bars."""
    counts: dict[int, tuple[int, bool]] = {}
    for value in values:
        try:
            counts[int(value.value)] = (value.count, value.selected)
        except ValueError:
            continue
    if not counts:
        return []
    tallest = max(count for count, _ in counts.values()) or 1
    first, last = min(counts), max(counts)
    years = range(first, last + 1) if last - first < MAX_CONTINUOUS_YEARS else sorted(counts)
    bars = []
    for year in years:
        count, selected = counts.get(year, (0, False))
        bars.append(Bar(year, count, round(100 * count / tallest, 1), selected))
    return bars
