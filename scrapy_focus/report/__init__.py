"""Seeing a crawl: its figures sampled into a time series, drawn as a report, served live.

* :mod:`.observer` follows the signals whose figures no stat holds (queue age,
  extraction and render times, engines per host);
* :mod:`.sample` is one sample of the figures, as data; :mod:`.sampling` takes one;
* :mod:`.recorder` appends a sample every ``FOCUS_SERIES_INTERVAL`` seconds to
  ``<corpus directory>/focus-series/<node>.jsonl``; :mod:`.reader` reads those
  files back (a torn last line is skipped) and merges a cluster's nodes;
* :mod:`.charts` draws the series with matplotlib, :mod:`.page` writes the
  self-contained HTML page, :mod:`.build` puts them together for
  ``scrapy focus-report``;
* :mod:`.prometheus` serves the same figures in Prometheus' text format.
"""
