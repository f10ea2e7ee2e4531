"""A separate virtualenv holding crawl4ai, for the harvest benchmark's crawl4ai baseline.

crawl4ai pulls in ~100 packages (playwright, litellm, scipy, ...), some of which clash
with the project's own pins, so it lives in its own virtualenv and runs as a child
process (:mod:`crawl4ai_crawl`, which imports neither scrapy nor scrapy_focus).  Only
its HTTP crawler strategy is used: no browser, so ``crawl4ai-setup`` / ``playwright
install`` (which download browser builds) are never run.

:func:`ensure_venv` makes the virtualenv once (about 50 s and 0.9 GB, from PyPI) and
reuses it afterwards, as long as it still imports the pinned crawl4ai.  Where: the
*path* argument, else ``$HARVEST_CRAWL4AI_VENV``, else
``~/.cache/scrapy-focus-bench/crawl4ai-venv``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

CRAWL4AI_VERSION = "0.9.5"
REQUIREMENT = f"crawl4ai=={CRAWL4AI_VERSION}"
ENV_VAR = "HARVEST_CRAWL4AI_VENV"
DEFAULT_VENV = Path.home() / ".cache" / "scrapy-focus-bench" / "crawl4ai-venv"
INSTALL_TIMEOUT = 1800  # seconds for pip install

# What crawl4ai_crawl.py imports: the probe fails (and the venv is rebuilt) if any is missing.
_PROBE = f"""
from crawl4ai.__version__ import __version__
from crawl4ai import AsyncWebCrawler, BrowserConfig, CacheMode, CrawlerRunConfig, HTTPCrawlerConfig
from crawl4ai.async_crawler_strategy import AsyncHTTPCrawlerStrategy
from crawl4ai.deep_crawling import (
    BestFirstCrawlingStrategy, ContentTypeFilter, DomainFilter, FilterChain,
    KeywordRelevanceScorer, URLPatternFilter,
)
assert __version__ == {CRAWL4AI_VERSION!r}, __version__
"""


def venv_dir(path: Path | None = None) -> Path:
    """The virtualenv's directory: *path*, else ``$HARVEST_CRAWL4AI_VENV``, else the default."""
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else DEFAULT_VENV


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def child_env(venv: Path) -> dict[str, str]:
    """Environment for the venv's python: crawl4ai's home folder (it creates ``.crawl4ai/``
    there on import) inside the venv rather than ``~``, no cloud banner, and no
    ``PYTHONPATH`` (the project's packages must not leak into the crawl4ai process)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.setdefault("CRAWL4_AI_BASE_DIRECTORY", str(venv / "crawl4ai-home"))
    env.setdefault("CRAWL4AI_NO_CLOUD_NOTICE", "1")
    return env


def _works(python: Path, venv: Path) -> bool:
    if not python.exists():
        return False
    try:
        proc = subprocess.run(
            [str(python), "-c", _PROBE],
            env=child_env(venv),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@contextlib.contextmanager
def _locked(venv: Path) -> Iterator[None]:
    """Serialise concurrent ensure_venv calls on the same venv (POSIX only)."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _tail(text: str, chars: int = 4000) -> str:
    return text[-chars:] if len(text) > chars else text


def ensure_venv(path: Path | None = None) -> Path:
    """Make the crawl4ai virtualenv if it does not work yet; return its python.

    Raises RuntimeError (with pip's output tail) if it cannot be made.
    """
    venv = venv_dir(path)
    python = venv_python(venv)
    if _works(python, venv):
        return python
    with _locked(venv):
        if _works(python, venv):  # made meanwhile by another process
            return python
        if venv.exists():
            if not (venv / "pyvenv.cfg").is_file() and any(venv.iterdir()):
                raise RuntimeError(
                    f"{venv} exists, is not a virtualenv and is not empty: "
                    f"remove it or point {ENV_VAR} elsewhere"
                )
            shutil.rmtree(venv)
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(venv)],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            raise RuntimeError(
                f"python -m venv {venv} failed ({made.returncode}):\n"
                + _tail(made.stdout + made.stderr)
            )
        command = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
        command.append(REQUIREMENT)
        try:
            pip = subprocess.run(
                command,
                env=child_env(venv),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else ""
            raise RuntimeError(
                f"pip install {REQUIREMENT} into {venv} timed out after {INSTALL_TIMEOUT} s:\n"
                + _tail(out or "")
            ) from exc
        if pip.returncode != 0:
            raise RuntimeError(
                f"pip install {REQUIREMENT} into {venv} failed ({pip.returncode}):\n"
                + _tail(pip.stdout)
            )
        if not _works(python, venv):
            probe = subprocess.run(
                [str(python), "-c", _PROBE], env=child_env(venv), capture_output=True, text=True
            )
            raise RuntimeError(
                f"{REQUIREMENT} installed into {venv} but does not import as expected:\n"
                + _tail(probe.stdout + probe.stderr)
            )
    return python


if __name__ == "__main__":
    print(ensure_venv(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
