"""Cluster mode: several Scrapy processes crawling one focused crawl through one Redis.

Each seam of :mod:`scrapy_focus.frontier.seams`, :mod:`scrapy_focus.engines.history`
and :mod:`scrapy_focus.engines.breaker` has a Redis implementation here, put in place
of the local one through :meth:`FocusRuntime.provide
<scrapy_focus.runtime.FocusRuntime.provide>` when ``FOCUS_CLUSTER_REDIS_URL`` (or
scrapy-redis's ``REDIS_URL``) is set.  Every key of a crawl is named by
:class:`~.keys.ClusterKeys`; nothing stored is ever a pickle.  The package imports
without the ``redis`` library; using it without the library raises ``NotConfigured``.
"""
