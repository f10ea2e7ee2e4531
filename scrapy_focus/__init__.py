"""scrapy-focus: focused, self-healing crawls for Scrapy, with the HTTP cache as the corpus."""

from scrapy_focus.addon import Addon

__version__ = "0.1.0"
__all__ = ["Addon", "__version__"]
