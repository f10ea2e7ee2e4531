"""Extraction and confidence benchmark on labelled pages.

One run measures, on the two labelled sets in ``shared/data``:

1. **Extraction F1** of :func:`scrapy_focus.extract.page.extract_page` with our
   default :class:`~scrapy_focus.extract.page.ExtractOptions` against
   trafilatura's defaults (``trafilatura.extract(html)``, plain, given the raw
   bytes), on WCXB-dev (word-level F1 against ``main_content``, the WCXB
   metric; mean per page, overall and per page type) and on the ScrapingHub
   article-extraction-benchmark (4-gram shingle F1 against ``articleBody``, the
   benchmark's own aggregate: F1 of the mean precision and the mean recall).
2. **fast=True vs fast=False** (trafilatura without / with its fallback
   extractors) inside ``extract_page``: F1 on both sets, paired bootstrap
   interval of the difference, and the time per page.
3. **Confidence**: how well :func:`scrapy_focus.extract.confidence.confidence`
   predicts a good extraction (word F1 >= 0.8) on WCXB-dev: ROC AUC measured on
   held-out folds (5 folds, grouped by site, so no page is scored by weights
   fitted on it or on its site's siblings), and the precision of the accept
   decision (confidence >= MEDIUM, >= HIGH) with the share of pages accepted.

``--fit`` refits the logistic model on all of WCXB-dev and prints the constants
to paste into ``scrapy_focus/extract/confidence.py``.  Pure Python: no numpy or
scikit-learn needed (the model has a dozen features and 1,500 rows).

Usage::

    .venv/bin/python benchmarks/bench_extract.py [--jobs 2] [--limit N]
        [--cache DIR] [--fit] [--write-docs]
    .venv/bin/python benchmarks/bench_extract.py --docs /usr/share/doc/python3.11/html --docs-only
    .venv/bin/python benchmarks/bench_extract.py --templates
    .venv/bin/python benchmarks/bench_extract.py --templates-sites 200

``--cache DIR`` keeps the per-page extractions (keyed by the source of
``page.py``/``text.py`` and the trafilatura version) so that ``--fit`` reruns in
seconds.  ``--write-docs`` replaces the "Extraction and confidence" section of
``docs/benchmarks.md`` with the report.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import multiprocessing
import os
import pickle
import platform
import random
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import trafilatura
from repo_root import REPO

from scrapy_focus.extract import confidence as conf
from scrapy_focus.extract.container import agreement
from scrapy_focus.extract.page import Extraction, ExtractOptions, extract_page
from scrapy_focus.extract.templates import Templates

DATA = REPO.parent / "shared" / "data"
DOCS = REPO / "docs" / "benchmarks.md"
EXTRACT = REPO / "scrapy_focus" / "extract"
TEXT = "scrapy_focus/text.py"
SECTION = "## Extraction and confidence (bench_extract.py)"
GOOD_F1 = 0.8
FOLDS = 5


# -- data ------------------------------------------------------------------------------------


@dataclass
class Page:
    dataset: str  # "wcxb" | "aeb"
    id: str
    url: str
    page_type: str
    truth: str
    path: Path


def load_wcxb(root: Path) -> list[Page]:
    pages = []
    with gzip.open(root / "ground-truth.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            pages.append(
                Page(
                    "wcxb",
                    row["file_id"],
                    row["url"] or "",
                    row["page_type"],
                    row["main_content"] or "",
                    root / "html" / f"{row['file_id']}.html.gz",
                )
            )
    return pages


def load_aeb(root: Path) -> list[Page]:
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    return [
        Page(
            "aeb", key, row["url"], "article", row["articleBody"], root / "html" / f"{key}.html.gz"
        )
        for key, row in sorted(truth.items())
    ]


# -- metrics ---------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def word_prf(predicted: str, truth: str) -> tuple[float, float, float]:
    """WCXB's metric: bag of lower-cased ``\\w+`` words; empty truth and empty output agree."""
    pred, ref = Counter(_WORD.findall(predicted.lower())), Counter(_WORD.findall(truth.lower()))
    if not ref:
        return (1.0, 1.0, 1.0) if not pred else (0.0, 0.0, 0.0)
    if not pred:
        return 0.0, 0.0, 0.0
    overlap = sum((pred & ref).values())
    precision, recall = overlap / sum(pred.values()), overlap / sum(ref.values())
    f1 = 2 * precision * recall / (precision + recall) if overlap else 0.0
    return precision, recall, f1


def shingle_prf(predicted: str, truth: str, n: int = 4) -> tuple[float, float, float]:
    """The article benchmark's metric: multiset of ``\\w+`` 4-gram shingles (case kept)."""

    def shingles(text: str) -> Counter[tuple[str, ...]]:
        tokens = _WORD.findall(text)
        return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)))

    pred, ref = shingles(predicted), shingles(truth)
    pred.pop((), None)
    ref.pop((), None)
    tp = sum((pred & ref).values())
    fp, fn = sum(pred.values()) - tp, sum(ref.values()) - tp
    precision = 1.0 if fp == fn == 0 else (tp / (tp + fp) if tp + fp else 0.0)
    recall = 1.0 if fp == fn == 0 else (tp / (tp + fn) if tp + fn else 0.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def aggregate_f1(prfs: list[tuple[float, float, float]], dataset: str) -> float:
    """WCXB: mean per-page F1.  Article benchmark: F1 of mean precision and mean recall."""
    if not prfs:
        return float("nan")
    if dataset == "wcxb":
        return statistics.fmean(f for _, _, f in prfs)
    precision = statistics.fmean(p for p, _, _ in prfs)
    recall = statistics.fmean(r for _, r, _ in prfs)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def prf(dataset: str, predicted: str, truth: str) -> tuple[float, float, float]:
    return word_prf(predicted, truth) if dataset == "wcxb" else shingle_prf(predicted, truth)


def roc_auc(scores: list[float], labels: list[bool]) -> float:
    """Probability that a random good page outscores a random bad one (ties count half)."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return float("nan")
    rank_sum = sum(r for r, label in zip(ranks, labels, strict=True) if label)
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def bootstrap_diff(a: list[float], b: list[float], rounds: int = 2000) -> tuple[float, float]:
    """95% interval of mean(a - b) over pages resampled with replacement."""
    rng = random.Random(7)
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds)]


# -- extraction runs -------------------------------------------------------------------------


@dataclass
class Result:
    page: Page
    baseline: str = ""
    baseline_seconds: float = 0.0
    fast: dict[str, Any] = field(default_factory=dict)  # Extraction.to_dict(), fast=True
    slow: dict[str, Any] = field(default_factory=dict)  # fast=False, cascade=False: the full
    cascade: dict[str, Any] = field(default_factory=dict)  # the cheap one, the full if doubtful
    baseline_cpu: float = 0.0  # seconds of thread CPU time of trafilatura.extract(body)
    # of trafilatura.extract(body, output_format="markdown", with_metadata=True), the call
    # issue 16 measured
    markdown_cpu: float = 0.0

    @property
    def ours(self) -> dict[str, Any]:
        """The extraction with the default options (what a crawl gets)."""
        if DEFAULTS.fast:
            return self.fast
        return self.cascade if DEFAULTS.cascade else self.slow


DEFAULTS = ExtractOptions()
LOAD: list[float] = []  # 1-minute load average when the extraction runs started and ended
_warm = False


def run_page(page: Page) -> Result:
    body = gzip.decompress(page.path.read_bytes())
    global _warm
    if not _warm:  # first call in a worker pays imports and caches: not part of any timing
        extract_page(body, page.url)
        trafilatura.extract(body, output_format="markdown", with_metadata=True)
        _warm = True
    started, cpu = time.perf_counter(), time.thread_time()
    baseline = trafilatura.extract(body) or ""
    baseline_seconds, baseline_cpu = time.perf_counter() - started, time.thread_time() - cpu
    cpu = time.thread_time()
    trafilatura.extract(body, output_format="markdown", with_metadata=True)
    markdown_cpu = time.thread_time() - cpu
    settings = {
        "fast": replace(DEFAULTS, fast=True, cascade=False),
        "slow": replace(DEFAULTS, fast=False, cascade=False),
        "cascade": replace(DEFAULTS, fast=False, cascade=True),
    }
    # the orders rotate over pages, so that cache effects do not favour one setting
    names = list(settings)
    shift = int(page.id, 16) % len(names)
    runs: dict[str, dict[str, Any]] = {}
    for name in names[shift:] + names[:shift]:
        cpu = time.thread_time()
        extraction = extract_page(body, page.url, None, settings[name])
        runs[name] = extraction.to_dict() | {"cpu": time.thread_time() - cpu}
        runs[name]["json_ld"] = _shrink(runs[name]["json_ld"])
    return Result(
        page,
        baseline,
        baseline_seconds,
        **runs,
        baseline_cpu=baseline_cpu,
        markdown_cpu=markdown_cpu,
    )


def _shrink(json_ld: list[Any]) -> list[Any]:
    """Keep the cache small: features only read types and a few text fields."""
    return json.loads(json.dumps(json_ld, default=str))[:20]


def cache_key() -> str:
    digest = hashlib.sha256()
    for module in (*sorted(str(p.relative_to(REPO)) for p in EXTRACT.glob("*.py")), TEXT):
        digest.update((REPO / module).read_bytes())
    digest.update(trafilatura.__version__.encode())
    digest.update(Path(__file__).read_bytes())  # what it times is defined here too
    return digest.hexdigest()[:16]


def run_all(pages: list[Page], jobs: int, cache: Path | None) -> list[Result]:
    path = cache / f"extract-{cache_key()}-{len(pages)}.pickle" if cache else None
    if path is not None and path.exists():
        with path.open("rb") as stored:
            data = pickle.load(stored)
        LOAD.extend(data["load"])
        return [Result(**{**row, "page": Page(**row["page"])}) for row in data["results"]]
    LOAD.append(os.getloadavg()[0])
    started = time.perf_counter()
    results: list[Result] = []
    if jobs > 1:
        with multiprocessing.get_context("spawn").Pool(jobs, maxtasksperchild=200) as pool:
            for result in pool.imap(run_page, pages, chunksize=4):
                results.append(result)
                _progress(len(results), len(pages), started)
    else:
        for page in pages:
            results.append(run_page(page))
            _progress(len(results), len(pages), started)
    print(file=sys.stderr)
    LOAD.append(os.getloadavg()[0])
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as stored:
            pickle.dump({"results": [asdict(r) for r in results], "load": LOAD}, stored)
    return results


def _progress(done: int, total: int, started: float) -> None:
    if done % 50 == 0 or done == total:
        elapsed = time.perf_counter() - started
        print(f"\r{done}/{total} pages, {elapsed:.0f} s", end="", file=sys.stderr, flush=True)


# -- confidence model ------------------------------------------------------------------------


def fit_logistic(
    rows: list[list[float]], labels: list[bool], l2: float = 1.0, iterations: int = 50
) -> tuple[list[float], float]:
    """L2-regularised logistic regression by Newton's method, on standardised columns;
    returns weights and bias in the original units (what the runtime model applies)."""
    _n, d = len(rows), len(rows[0])
    means = [statistics.fmean(r[j] for r in rows) for j in range(d)]
    stds = [statistics.pstdev([r[j] for r in rows]) or 1.0 for j in range(d)]
    x = [[1.0] + [(r[j] - means[j]) / stds[j] for j in range(d)] for r in rows]
    y = [1.0 if label else 0.0 for label in labels]
    w = [0.0] * (d + 1)
    for _ in range(iterations):
        grad = [0.0] * (d + 1)
        hess = [[0.0] * (d + 1) for _ in range(d + 1)]
        for xi, yi in zip(x, y, strict=True):
            p = _sigmoid(sum(a * b for a, b in zip(w, xi, strict=True)))
            g, h = p - yi, p * (1 - p)
            for j in range(d + 1):
                grad[j] += g * xi[j]
                hj = h * xi[j]
                row = hess[j]
                for k in range(j, d + 1):
                    row[k] += hj * xi[k]
        for j in range(1, d + 1):  # no penalty on the bias
            grad[j] += l2 * w[j]
            hess[j][j] += l2
        hess[0][0] += 1e-6  # all one class in a small sample: keep the system solvable
        for j in range(d + 1):
            for k in range(j):
                hess[j][k] = hess[k][j]
        step = _solve(hess, grad)
        w = [a - b for a, b in zip(w, step, strict=True)]
        if max(abs(s) for s in step) < 1e-8:
            break
    weights = [w[j + 1] / stds[j] for j in range(d)]
    bias = w[0] - sum(weights[j] * means[j] for j in range(d))
    return weights, bias


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z)) if z > -500 else 0.0


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (a is small and positive definite)."""
    n = len(b)
    m = [[*row[:], b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            factor = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= factor * m[col][c]
    out = [0.0] * n
    for r in range(n - 1, -1, -1):
        out[r] = (m[r][n] - sum(m[r][c] * out[c] for c in range(r + 1, n))) / m[r][r]
    return out


def site(page: Page) -> str:
    host = urlsplit(page.url).hostname
    if not host:
        return f"page:{page.id}"
    return ".".join(host.removeprefix("www.").split(".")[-2:])


def folds_by_site(results: list[Result], k: int = FOLDS) -> list[int]:
    """Assign every page a fold so that pages of one site share a fold."""
    sites = sorted({site(r.page) for r in results})
    random.Random(13).shuffle(sites)
    fold_of = {s: i % k for i, s in enumerate(sites)}
    return [fold_of[site(r.page)] for r in results]


def score_with(extraction: Extraction, weights: list[float], bias: float) -> float:
    return conf.confidence(
        extraction, weights=dict(zip(conf.FEATURES, weights, strict=True)), bias=bias
    )


@dataclass
class Calibration:
    auc_cv: float
    auc_shipped: float
    scores_cv: list[float]
    labels: list[bool]
    weights: list[float]
    bias: float
    kept: list[Result]


def calibrate(results: list[Result], l2: float) -> Calibration:
    """Cross-validated scores for every page, then a fit on all pages (the constants)."""
    kept = [r for r in results if r.page.dataset == "wcxb" and r.page.truth.strip()]
    extractions = [Extraction.from_dict(r.ours) for r in kept]
    labels = [
        word_prf(e.text, r.page.truth)[2] >= GOOD_F1 for e, r in zip(extractions, kept, strict=True)
    ]
    rows = [list(conf.features(e).values()) for e in extractions]
    # below the content floor confidence is 0 whatever the weights: not part of the fit
    fitted = [conf.confidence(e, weights={}, bias=0.0) > 0 for e in extractions]
    folds = folds_by_site(kept)
    scores = [0.0] * len(kept)
    for fold in range(FOLDS):
        train = [i for i, f in enumerate(folds) if f != fold and fitted[i]]
        weights, bias = fit_logistic([rows[i] for i in train], [labels[i] for i in train], l2)
        for i, f in enumerate(folds):
            if f == fold:
                scores[i] = score_with(extractions[i], weights, bias)
    everything = [i for i in range(len(kept)) if fitted[i]]
    weights, bias = fit_logistic([rows[i] for i in everything], [labels[i] for i in everything], l2)
    shipped = [conf.confidence(e) for e in extractions]
    return Calibration(
        roc_auc(scores, labels), roc_auc(shipped, labels), scores, labels, weights, bias, kept
    )


def accept_table(scores: list[float], labels: list[bool]) -> list[tuple[str, float, float, int]]:
    rows = []
    for name, threshold in (
        ("MEDIUM", conf.MEDIUM_CONFIDENCE),
        ("HIGH", conf.HIGH_CONFIDENCE),
    ):
        accepted = [
            label for score, label in zip(scores, labels, strict=True) if score >= threshold
        ]
        precision = sum(accepted) / len(accepted) if accepted else float("nan")
        rows.append(
            (f"{name} (>= {threshold})", precision, len(accepted) / len(labels), len(accepted))
        )
    return rows


# -- report ----------------------------------------------------------------------------------


def report(results: list[Result], cal: Calibration, l2: float) -> str:
    out: list[str] = [SECTION, ""]
    n_wcxb = sum(r.page.dataset == "wcxb" for r in results)
    n_aeb = sum(r.page.dataset == "aeb" for r in results)
    out += [
        f"Command: `.venv/bin/python benchmarks/bench_extract.py --jobs 2 --write-docs` "
        f"(trafilatura {trafilatura.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}).",
        "",
        "Data (kept offline in `shared/data`): the ScrapingHub article-extraction-benchmark "
        f"({n_aeb} news/article pages, MIT, 2019; metric: F1 over 4-gram token shingles of the "
        "text against `articleBody`, aggregated as the F1 of mean precision and mean recall, as "
        "its `evaluate.py` does) and the WCXB development split "
        f"({n_wcxb} pages, 7 page types, CC-BY-4.0, (c) Murrough Foley 2026; metric: word-level "
        "F1 of the text against `main_content`, lower-cased `\\w+` words, mean over pages, as its "
        "`evaluate.py` does).",
        "",
        "*ours* is `extract_page(body, url)` with the default `ExtractOptions` "
        f"(fast={DEFAULTS.fast}); *fast=True* / *fast=False* is the same call without / with "
        "trafilatura's fallback extractors (readability, jusText); *trafilatura default* is "
        "`trafilatura.extract(html_bytes)` with nothing else set (it decodes the bytes itself "
        "and includes comments, skips metadata).",
        "",
        "### Extraction F1",
        "",
        "| set | pages | trafilatura default | ours (defaults) | full (cascade off) | fast=True |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    groups: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for r in results:
        groups[(r.page.dataset, "all")].append(r)
        if r.page.dataset == "wcxb":
            groups[("wcxb", r.page.page_type)].append(r)
    order = [("aeb", "all"), ("wcxb", "all"), *sorted(k for k in groups if k[1] != "all")]
    goals: dict[str, bool] = {}
    for key in order:
        if key not in groups:
            continue
        rs = groups[key]
        dataset = key[0]
        cells = [
            aggregate_f1([prf(dataset, text(r), r.page.truth) for r in rs], dataset)
            for text in (
                lambda r: r.baseline,
                lambda r: r.ours["text"],
                lambda r: r.slow["text"],
                lambda r: r.fast["text"],
            )
        ]
        if key == ("aeb", "all"):
            goals["aeb"] = cells[1] >= cells[0]
        name = "article benchmark" if dataset == "aeb" else f"WCXB-dev {key[1]}"
        if key[1] == "all" and dataset == "wcxb":
            name = "**WCXB-dev, all**"
        elif dataset == "aeb":
            name = "**article benchmark**"
        out.append(f"| {name} | {len(rs)} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")

    out += cost_table(groups)
    out += [
        "",
        "### fast=True vs fast=False",
        "",
        "| set | F1 fast=True | F1 fast=False | difference (95% bootstrap) "
        "| ms/page fast=True | ms/page fast=False | ms/page trafilatura default |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    losses = []
    for dataset, name in (("aeb", "article benchmark"), ("wcxb", "WCXB-dev")):
        rs = groups[(dataset, "all")]
        fast = [prf(dataset, r.fast["text"], r.page.truth)[2] for r in rs]
        slow = [prf(dataset, r.slow["text"], r.page.truth)[2] for r in rs]
        low, high = bootstrap_diff(fast, slow)
        if high < 0:
            losses.append(f"{statistics.fmean(slow) - statistics.fmean(fast):.3f} on {name}")
        out.append(
            f"| {name} | {statistics.fmean(fast):.3f} | {statistics.fmean(slow):.3f} "
            f"| {statistics.fmean(fast) - statistics.fmean(slow):+.3f} [{low:+.3f}, {high:+.3f}] "
            f"| {1000 * statistics.fmean(r.fast['seconds'] for r in rs):.0f} "
            f"| {1000 * statistics.fmean(r.slow['seconds'] for r in rs):.0f} "
            f"| {1000 * statistics.fmean(r.baseline_seconds for r in rs):.0f} |"
        )
    out += [
        "",
        "(F1 here is the mean per-page F1 on both sets, so that pages pair up; time is the "
        "whole `extract_page` call: decode, parse, structured data, page measures, "
        "trafilatura, metadata, Markdown; trafilatura's default skips metadata. "
        f"{os.cpu_count()} cores shared with other jobs: 1-minute load average "
        + " then ".join(f"{load:.1f}" for load in LOAD)
        + " at the start and end of the extraction runs, so absolute times are inflated; the "
        "three settings run interleaved page by page, so their ratios hold.)",
        "",
        (
            f"Decision: fast=True loses {' and '.join(losses)} of F1 (the 95% interval of "
            "the difference excludes 0), so `ExtractOptions.fast` defaults to False."
            if losses
            else "Decision: fast=True loses nothing measurable here, so it can be the default."
        ),
        "",
        "### Confidence",
        "",
        f"Label: a page's extraction is *good* when its word F1 >= {GOOD_F1} "
        f"({sum(cal.labels)} of {len(cal.labels)} WCXB-dev pages with a non-empty "
        f"`main_content`; {n_wcxb - len(cal.labels)} pages whose ground truth is empty are left "
        "out). Model: logistic regression on `confidence.features()` "
        f"(L2 = {l2}, standardised), {FOLDS} folds grouped by site.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| ROC AUC, held-out folds | **{cal.auc_cv:.3f}** |",
        f"| ROC AUC, shipped constants on all pages (in-sample) | {cal.auc_shipped:.3f} |",
    ]
    for scores, where in ((cal.scores_cv, "held-out"),):
        for name, precision, share, count in accept_table(scores, cal.labels):
            out.append(
                f"| accept at {name}, {where}: precision / share accepted "
                f"| {precision:.3f} / {share:.1%} ({count}) |"
            )
    base = sum(cal.labels) / len(cal.labels)
    out.append(f"| share of good extractions (precision of accepting all) | {base:.3f} |")
    out += ["", "Per page type (held-out scores):", ""]
    out += [
        "| page type | pages | good | AUC | precision at MEDIUM | accepted at MEDIUM |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    by_type: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(cal.kept):
        by_type[r.page.page_type].append(i)
    for page_type, idx in sorted(by_type.items()):
        scores = [cal.scores_cv[i] for i in idx]
        labels = [cal.labels[i] for i in idx]
        _, precision, share, _ = accept_table(scores, labels)[0]
        out.append(
            f"| {page_type} | {len(idx)} | {sum(labels) / len(labels):.0%} "
            f"| {roc_auc(scores, labels):.3f} | {precision:.3f} | {share:.0%} |"
        )
    out += [
        "",
        "Features (`confidence.FEATURES`, all read from the `Extraction`): length of the main "
        "text (log), text-to-HTML ratio, share of the page's visible text that is in the main "
        "text (and a hinge above 0.8: an extraction that is the whole page is usually a dump), "
        "link density of the page, share of the page's text in nav/header/footer/aside and in "
        "`<p>`, shares of main-text lines that end a sentence, repeat another line or are list "
        "items, boilerplate and shop phrases per 1,000 characters, metadata completeness, "
        "JSON-LD present / of an article type / carrying an `articleBody` and the share of that "
        "body's words found in the main text, `og:type=article`, number of headings, URL path "
        "depth. Tried and dropped because leaving them out did not lower the held-out AUC: "
        "microdata present, number of prose paragraphs, a date in the URL, shares of short and "
        "of table lines, mean line length, a product/listing JSON-LD type. That choice was made "
        "on these same folds, so the held-out AUC is slightly optimistic (the full set of 26 "
        "scored about 0.01 lower).",
        "",
        "Goals: extraction F1 >= trafilatura's default on the article benchmark: "
        f"**{'met' if goals['aeb'] else 'NOT met'}**; held-out AUC >= 0.8: "
        f"**{'met' if cal.auc_cv >= 0.8 else 'NOT met'}**.",
    ]
    return "\n".join(out) + "\n"


def cost_table(groups: dict[tuple[str, str], list[Result]]) -> list[str]:
    """CPU time per page (thread time of the worker, so other jobs on the machine do not
    count) of each setting, and the share of pages the cascade escalated, and why."""
    out = [
        "",
        "### CPU per page",
        "",
        "| set | setting | F1 | CPU ms/page | x trafilatura default | p95 ms | max ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for dataset, name in (("aeb", "article benchmark"), ("wcxb", "WCXB-dev")):
        rs = groups.get((dataset, "all"), [])
        if not rs:
            continue
        base = statistics.fmean(r.baseline_cpu for r in rs)
        runs = (
            ("trafilatura default", lambda r: r.baseline, lambda r: r.baseline_cpu),
            ("the cascade", lambda r: r.cascade["text"], lambda r: r.cascade["cpu"]),
            ("full (cascade off)", lambda r: r.slow["text"], lambda r: r.slow["cpu"]),
            ("fast=True", lambda r: r.fast["text"], lambda r: r.fast["cpu"]),
        )
        markdown = ("trafilatura, markdown + metadata (no F1: Markdown with a header)", None)
        for label, text, cpu in (*runs, (*markdown, lambda r: r.markdown_cpu)):
            if text is None:
                f1 = "—"
            else:
                prfs = [prf(dataset, text(r), r.page.truth) for r in rs]
                f1 = f"{aggregate_f1(prfs, dataset):.3f}"
            times = sorted(cpu(r) for r in rs)
            mean = statistics.fmean(times)
            out.append(
                f"| {name} | {label} | {f1} | {1000 * mean:.1f} | {mean / base:.2f}x "
                f"| {1000 * times[int(0.95 * (len(times) - 1))]:.0f} | {1000 * times[-1]:.0f} |"
            )
        reasons = Counter(r.cascade.get("escalated") or "kept" for r in rs)
        out.append(
            f"| {name} | cascade decisions | "
            + ", ".join(f"{k} {v / len(rs):.0%}" for k, v in reasons.most_common())
            + " | | | | |"
        )
    return out


def docs_cost(root: Path) -> str:
    """Thread CPU per page of extracting every page under *root* (the Python docs), one
    process, the settings interleaved page by page: trafilatura's default, the call the
    issue measured (Markdown with metadata), ours on each page alone, and ours with the
    host's main-text element learnt from the pages before (``FOCUS_EXTRACT_TEMPLATES``,
    the pages in path order, as one crawl of the site would learn it), with the word F1
    of its texts against ours on each page alone."""
    files = sorted(root.rglob("*.html"))
    templates = Templates()
    read_from_element: set[str] = set()

    def learnt(body: bytes, url: str) -> str:
        extraction = extract_page(body, url, "text/html", templates.options_for(url, DEFAULTS))
        templates.learn(url, extraction)
        if extraction.container is not None:
            read_from_element.add(url)
        return extraction.text

    alone = "ours, each page alone"
    learning = "ours, the host's element learnt (FOCUS_EXTRACT_TEMPLATES)"
    runs: dict[str, Any] = {
        "trafilatura default": lambda body, url: trafilatura.extract(body),
        "trafilatura, markdown + metadata": lambda body, url: trafilatura.extract(
            body, output_format="markdown", with_metadata=True
        ),
        alone: lambda body, url: extract_page(body, url, "text/html").text,
        learning: learnt,
    }
    times: dict[str, list[tuple[float, str, int]]] = defaultdict(list)
    agreements: list[float] = []
    for path in files:
        body, url = path.read_bytes(), path.as_uri()
        texts: dict[str, str] = {}
        for name, run in runs.items():
            started = time.thread_time()
            texts[name] = run(body, url) or ""
            times[name].append((time.thread_time() - started, path.name, len(texts[name])))
        if url in read_from_element:
            agreements.append(agreement(texts[learning], texts[alone]))
    base = statistics.fmean(t for t, _, _ in times["trafilatura default"])
    out = [
        f"### CPU per page on the Python docs ({len(files)} pages)",
        "",
        "| setting | mean ms | x default | median ms | p95 ms | max | pages > 1 s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rows in times.items():
        ts = sorted(t for t, _, _ in rows)
        worst = max(rows)
        out.append(
            f"| {name} | {1000 * statistics.fmean(ts):.1f} | {statistics.fmean(ts) / base:.2f}x "
            f"| {1000 * statistics.median(ts):.1f} | {1000 * ts[int(0.95 * (len(ts) - 1))]:.0f} "
            f"| {worst[0]:.2f} s ({worst[1]}, {worst[2]:,} chars) "
            f"| {sum(t > 1 for t in ts)} |"
        )
    if agreements:
        out += [
            "",
            f"Read from the learnt element: {len(agreements)} of {len(files)} pages; word F1 "
            f"of their text against ours on each page alone: mean "
            f"{statistics.fmean(agreements):.3f}, median {statistics.median(agreements):.3f}, "
            f"below 0.95 on {sum(a < 0.95 for a in agreements)}, below 0.8 on "
            f"{sum(a < 0.8 for a in agreements)}.",
        ]
    return "\n".join(out) + "\n"


def _alone_and_learnt(
    body: bytes, url: str, templates: Templates, cpu: dict[str, float]
) -> tuple[Extraction, Extraction]:
    """*body* extracted alone and with *templates*' options (which then learn from it),
    each call's thread CPU added to *cpu*."""
    started = time.thread_time()
    alone = extract_page(body, url, "text/html")
    cpu["alone"] += time.thread_time() - started
    started = time.thread_time()
    learnt = extract_page(body, url, "text/html", templates.options_for(url, DEFAULTS))
    cpu["learnt"] += time.thread_time() - started
    templates.learn(url, learnt)
    return alone, learnt


def wcxb_templates(pages: list[Page]) -> str:
    """``FOCUS_EXTRACT_TEMPLATES`` on WCXB-dev: each host's pages in the set's order, one
    learner, against each page alone.  A host's first page is never learnt from, so only
    the pages of hosts with several pages are run (the others extract as alone)."""
    hosts = Counter(urlsplit(p.url).netloc.lower() for p in pages)
    shared = [p for p in pages if hosts[urlsplit(p.url).netloc.lower()] > 1]
    templates = Templates()
    cpu: dict[str, float] = defaultdict(float)
    f1s: dict[str, list[float]] = defaultdict(list)
    templated = 0
    for page in shared:
        body = gzip.decompress(page.path.read_bytes())
        alone, learnt = _alone_and_learnt(body, page.url, templates, cpu)
        templated += learnt.container is not None
        f1s["alone"].append(prf("wcxb", alone.text, page.truth)[2])
        f1s["learnt"].append(prf("wcxb", learnt.text, page.truth)[2])
    return (
        f"WCXB-dev, FOCUS_EXTRACT_TEMPLATES: {len(shared)} of {len(pages)} pages are of a host "
        f"with several pages; {templated} read from a learnt element. On those "
        f"{len(shared)}: word F1 {statistics.fmean(f1s['learnt']):.3f} (each page alone "
        f"{statistics.fmean(f1s['alone']):.3f}), CPU {cpu['learnt'] / cpu['alone']:.2f}x of "
        f"each page alone ({1000 * cpu['learnt'] / len(shared):.1f} against "
        f"{1000 * cpu['alone'] / len(shared):.1f} ms a page).\n"
    )


def sites_templates(limit: int) -> str:
    """``FOCUS_EXTRACT_TEMPLATES`` on every documentation site of the harvest suites that is
    installed: up to *limit* pages of each (every k-th in path order), one learner per
    site, each page also extracted alone; thread CPU, and the word F1 of the pages read
    from the element against their extraction alone."""
    from harvest_suite import SITES

    out = [
        "| site | pages | read from the element | CPU x each page alone | ms/page alone "
        "| word F1 mean / median | pages below 0.95 | template |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    totals: dict[str, float] = defaultdict(float)
    for site in SITES.values():
        files = sorted(site.root.rglob("*.html")) if site.root.is_dir() else []
        if not files:
            continue
        files = files[:: max(1, len(files) // limit)][:limit]
        extract_page(files[0].read_bytes(), "http://warm-up.example/")  # first-use caches
        templates, cpu, agreements = Templates(), defaultdict(float), []
        for path in files:
            url = f"http://{site.name}.example/{path.name}"
            alone, learnt = _alone_and_learnt(path.read_bytes(), url, templates, cpu)
            if learnt.container is not None:
                agreements.append(agreement(learnt.text, alone.text))
        for key in ("alone", "learnt"):
            totals[key] += cpu[key]
        totals["pages"] += len(files)
        totals["read"] += len(agreements)
        f1 = (
            f"{statistics.fmean(agreements):.3f} / {statistics.median(agreements):.3f}"
            if agreements
            else "—"
        )
        out.append(
            f"| {site.name} | {len(files)} | {len(agreements)} | "
            f"{cpu['learnt'] / cpu['alone']:.2f}x | {1000 * cpu['alone'] / len(files):.1f} | "
            f"{f1} | {sum(a < 0.95 for a in agreements)} | "
            f"`{templates.template(f'http://{site.name}.example/') or '—'}` |"
        )
    out.append(
        f"| all | {totals['pages']:.0f} | {totals['read']:.0f} | "
        f"{totals['learnt'] / totals['alone']:.2f}x | "
        f"{1000 * totals['alone'] / max(1, totals['pages']):.1f} | | | |"
    )
    return "\n".join(out) + "\n"


def print_constants(cal: Calibration) -> None:
    print("\n# --- paste into scrapy_focus/extract/confidence.py ---")
    print("WEIGHTS: dict[str, float] = {")
    for name, weight in zip(conf.FEATURES, cal.weights, strict=True):
        print(f'    "{name}": {weight:.6g},')
    print("}")
    print(f"BIAS = {cal.bias:.6g}")
    print(f"# cross-validated AUC: {cal.auc_cv:.4f}\n")


def write_docs(section: str) -> None:
    current = DOCS.read_text(encoding="utf-8") if DOCS.exists() else "# Benchmarks\n"
    start = current.find(SECTION)
    if start == -1:
        updated = current.rstrip("\n") + "\n\n" + section
    else:
        following = current.find("\n## ", start + len(SECTION))
        tail = current[following + 1 :] if following != -1 else ""
        updated = current[:start] + section + ("\n" + tail if tail else "")
    DOCS.write_text(updated, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wcxb", type=Path, default=DATA / "wcxb-dev")
    parser.add_argument("--aeb", type=Path, default=DATA / "article-extraction-benchmark")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--limit", type=int, default=0, help="pages per set (0: all)")
    parser.add_argument("--cache", type=Path, help="directory keeping the extractions")
    parser.add_argument("--l2", type=float, default=1.0, help="ridge penalty of the fit")
    parser.add_argument("--fit", action="store_true", help="print constants to paste")
    parser.add_argument("--write-docs", action="store_true", help=f"update {DOCS.name}")
    parser.add_argument("--docs", type=Path, help="also time every page under this directory")
    parser.add_argument("--docs-only", action="store_true", help="only the --docs timing")
    parser.add_argument(
        "--templates", action="store_true", help="only FOCUS_EXTRACT_TEMPLATES on WCXB-dev"
    )
    parser.add_argument(
        "--templates-sites",
        type=int,
        metavar="PAGES",
        help="only FOCUS_EXTRACT_TEMPLATES on the harvest suites' installed sites, PAGES each",
    )
    args = parser.parse_args()
    if args.templates:
        print(wcxb_templates(load_wcxb(args.wcxb)))
        return
    if args.templates_sites:
        print(sites_templates(args.templates_sites))
        return
    if args.docs:
        print(docs_cost(args.docs))
        if args.docs_only:
            return

    pages = load_aeb(args.aeb) + load_wcxb(args.wcxb)
    if args.limit:
        pages = [p for p in pages if p.dataset == "aeb"][: args.limit] + [
            p for p in pages if p.dataset == "wcxb"
        ][: args.limit]
    results = run_all(pages, args.jobs, args.cache)
    cal = calibrate(results, args.l2)
    if args.fit:
        print_constants(cal)
    section = report(results, cal, args.l2)
    print(section)
    if args.write_docs:
        write_docs(section)


if __name__ == "__main__":
    main()
