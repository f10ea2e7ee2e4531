"""The test web and the benchmark harness, shared by tests/ and benchmarks/.

Not part of the distribution (pyproject's ``packages.find`` ships ``scrapy_focus``
alone): it is imported from the repository root, which pytest puts on ``sys.path``
(the root ``conftest.py``), each benchmark inserts before importing it, and every
child crawl gets through ``PYTHONPATH``.

``farm``         the test farm: routes of articles, a link graph, cache and status cases
``hostile``      the hostile web: sites on their own loopback addresses, built on the farm
``quiet_server`` a threaded HTTP server on 127.0.0.x that logs nothing
``crawl``        a crawl as a child process: ``-s NAME=VALUE`` arguments, its env, its output
``stats_dump``   the extension a child crawl hands its final stats back through
``processes``    CPU seconds and peak RSS of a crawl's whole process tree
``machine``      the one-line description of the machine a benchmark ran on
``provenance``   the commit a benchmark measured
"""
