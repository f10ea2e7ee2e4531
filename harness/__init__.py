"""The test web and the benchmark harness, shared by tests/ and benchmarks/.

Not part of the distribution (pyproject's ``packages.find`` ships ``scrapy_focus``
alone): it is imported from the repository root, which pytest puts on ``sys.path``
(the root ``conftest.py``), each benchmark through ``benchmarks/repo_root.py``, and
every child crawl through ``PYTHONPATH`` (harness.crawl.crawl_env).

``farm``         the test farm: a server mapping paths to ``farm_pages`` and ``farm_topics``
``hostile``      the hostile web: the sites of ``hostile_engines``, ``hostile_limits`` and
                 ``hostile_browser`` (built on ``hostile_base``), each on its own address
``quiet_server`` a threaded HTTP server on 127.0.0.x that logs nothing
``crawl``        a crawl as a child process: ``-s NAME=VALUE`` arguments, its env, its output
``stats_dump``   the extension a child crawl hands its final stats back through
``processes``    CPU seconds and peak RSS of a crawl's whole process tree
``machine``      the one-line description of the machine a benchmark ran on
``provenance``   the commit a benchmark measured
"""
