"""The report's charts: matplotlib figures rendered as inline SVG.

The contract: each function takes samples (:mod:`.sample`) and returns one
``<svg>`` element as text, or ``""`` when there is nothing to draw yet.  The
figures use matplotlib's object API and its SVG backend (no pyplot, no
global figure state, no display); text stays text (``svg.fonttype = none``),
which matplotlib escapes as XML, so a host name from the web is never markup.
Every drawn series carries an ``id`` starting with ``data-`` (the test counts
their points).  Needs matplotlib (the ``report`` extra).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy_focus.report.sample import Sample

_STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "scrapy-focus",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
MAX_BARS = 15


def _figure(height: float = 3.0) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(7.0, height), dpi=96, layout="constrained")


def _svg(figure: Any) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context(_STYLE):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # the element alone: no XML prolog, no DOCTYPE


def _minutes(samples: Sequence[Sample]) -> list[float]:
    start = samples[0].time
    return [(s.time - start) / 60 for s in samples]


def _line(axes: Any, xs: Sequence[float], ys: Sequence[Any], name: str, **style: Any) -> None:
    (line,) = axes.plot(xs, ys, label=name, **style)
    line.set_gid("data-" + name.replace(" ", "-"))


def relevant_vs_fetches(samples: Sequence[Sample], baseline: Sequence[Sample] = ()) -> str:
    if not samples:
        return ""
    with _rc():
        figure = _figure()
        axes = figure.add_subplot()
        _line(
            axes, [s.pages for s in samples], [s.relevant for s in samples], "focused", marker="."
        )
        if baseline:
            xs, ys = [s.pages for s in baseline], [s.relevant for s in baseline]
            _line(axes, xs, ys, "breadth-first baseline", linestyle="--", color="grey")
        axes.set_xlabel("pages fetched")
        axes.set_ylabel("relevant pages")
        axes.legend(loc="lower right")
        return _svg(figure)


def harvest_over_time(samples: Sequence[Sample]) -> str:
    if not samples:
        return ""
    with _rc():
        figure = _figure()
        axes = figure.add_subplot()
        _line(axes, _minutes(samples), [s.harvest for s in samples], "harvest rate", marker=".")
        axes.set_ylim(0, 1.05)
        axes.set_xlabel("minutes")
        axes.set_ylabel("relevant / fetched")
        return _svg(figure)


def pages_per_minute(samples: Sequence[Sample]) -> str:
    if len(samples) < 2:
        return ""
    with _rc():
        figure = _figure()
        axes = figure.add_subplot()
        minutes = _minutes(samples)
        for name, attr in (("fetched per minute", "pages"), ("accepted per minute", "accepted")):
            rates = [
                max(0.0, (getattr(b, attr) - getattr(a, attr)) / max(1e-9, (b.time - a.time) / 60))
                for a, b in itertools.pairwise(samples)
            ]
            _line(axes, minutes[1:], rates, name, marker=".")
        axes.set_xlabel("minutes")
        axes.set_ylabel("pages / minute")
        axes.legend(loc="upper left")
        return _svg(figure)


def frontier_over_time(samples: Sequence[Sample]) -> str:
    if not samples:
        return ""
    with _rc():
        figure = _figure()
        axes = figure.add_subplot()
        minutes = _minutes(samples)
        _line(axes, minutes, [s.frontier for s in samples], "frontier size", color="tab:blue")
        axes.set_xlabel("minutes")
        axes.set_ylabel("entries queued", color="tab:blue")
        scores = axes.twinx()
        best = [s.best_score if s.best_score is not None else float("nan") for s in samples]
        median = [s.median_score if s.median_score is not None else float("nan") for s in samples]
        _line(scores, minutes, best, "best score", color="tab:green", marker=".")
        _line(scores, minutes, median, "median score", color="tab:olive", linestyle=":")
        scores.set_ylim(0, 1.05)
        scores.set_ylabel("link score", color="tab:green")
        scores.legend(loc="upper right")
        return _svg(figure)


def latencies(samples: Sequence[Sample]) -> str:
    """Queue age, extraction time and render wait percentiles over time."""
    if not samples:
        return ""
    with _rc():
        figure = _figure()
        axes = figure.add_subplot()
        minutes = _minutes(samples)
        drawn = False
        for label, attr in (
            ("queue age", "queue_age"),
            ("extraction", "extract_seconds"),
            ("render wait", "render_wait"),
        ):
            for q in ("p50", "p95"):
                ys = [getattr(getattr(s, attr), q) for s in samples]
                if any(y is not None for y in ys):
                    ys = [float("nan") if y is None else y for y in ys]
                    style = "-" if q == "p50" else "--"
                    _line(axes, minutes, ys, f"{label} {q}", linestyle=style, marker=".")
                    drawn = True
        if not drawn:
            return ""
        axes.set_yscale("symlog", linthresh=0.1)
        axes.set_xlabel("minutes")
        axes.set_ylabel("seconds")
        axes.legend(loc="upper left", ncols=2)
        return _svg(figure)


def bars(counts: dict[str, float], xlabel: str, name: str) -> str:
    """A horizontal bar per key, largest first (rejection reasons, top hosts...)."""
    ranked = sorted(((v, k) for k, v in counts.items() if v), reverse=True)[:MAX_BARS]
    if not ranked:
        return ""
    with _rc():
        figure = _figure(0.6 + 0.28 * len(ranked))
        axes = figure.add_subplot()
        labels = [k for _, k in ranked][::-1]
        drawn = axes.barh(labels, [v for v, _ in ranked][::-1], color="tab:red")
        for i, patch in enumerate(drawn):
            patch.set_gid(f"data-{name}-{i}")
        axes.set_xlabel(xlabel)
        return _svg(figure)


def engine_mix(hosts: dict[str, dict[str, int]]) -> str:
    """Per host, its final responses by engine, stacked."""
    ranked = sorted(hosts, key=lambda h: -sum(hosts[h].values()))[:MAX_BARS][::-1]
    ranked = [h for h in ranked if sum(hosts[h].values())]
    if not ranked:
        return ""
    engines = sorted({e for h in ranked for e in hosts[h]})
    with _rc():
        figure = _figure(0.9 + 0.28 * len(ranked))
        axes = figure.add_subplot()
        left = [0.0] * len(ranked)
        for engine in engines:
            widths = [hosts[h].get(engine, 0) for h in ranked]
            drawn = axes.barh(ranked, widths, left=left, label=engine)
            for i, patch in enumerate(drawn):
                patch.set_gid(f"data-engine-{engine}-{i}")
            left = [a + b for a, b in zip(left, widths, strict=False)]
        axes.set_xlabel("final responses")
        axes.legend(loc="lower right")
        return _svg(figure)


def host_rates(rates: dict[str, tuple[float, float]]) -> str:
    """Per host, requests per minute measured, and the most its delay allows."""
    ranked = sorted(rates, key=lambda h: -rates[h][0])[:MAX_BARS][::-1]
    if not ranked:
        return ""
    with _rc():
        figure = _figure(0.9 + 0.28 * len(ranked))
        axes = figure.add_subplot()
        drawn = axes.barh(ranked, [rates[h][0] for h in ranked], label="measured")
        for i, patch in enumerate(drawn):
            patch.set_gid(f"data-rate-{i}")
        allowed = [(h, rates[h][1]) for h in ranked if rates[h][1] > 0]
        if allowed:
            marks = axes.scatter(
                [a for _, a in allowed],
                [h for h, _ in allowed],
                marker="|",
                s=200,
                color="black",
                label="allowed by the delay",
                zorder=3,
            )
            marks.set_gid("data-allowed")
        axes.set_xlabel("requests / minute")
        axes.legend(loc="lower right")
        return _svg(figure)


def _rc() -> Any:
    import matplotlib

    return matplotlib.rc_context(_STYLE)
