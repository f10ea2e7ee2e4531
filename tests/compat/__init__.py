"""Compatibility tests: Scrapy's released suite (run.py) and scrapy-playwright parity."""
