"""Run Scrapy's released test suite against scrapy-focus's components.

    .venv-compat/bin/python tests/compat/run.py [PYTEST_ARGS...]

Test paths among the arguments (``tests/test_crawl.py::...``) replace the suite.

Downloads the sdist of the installed Scrapy from the package registry (cached under
``~/.cache/scrapy-focus-compat``), unpacks it to a temporary directory, adds the test
modules of ``scrapy_tests/`` to its ``tests/`` and runs :data:`SUITE` with the
:mod:`focus_compat` plugin, which substitutes our components.  Nothing of Scrapy's is
copied into this repository.  Run it in a virtualenv of its own (``.ci/compat`` makes
one): Scrapy's suite needs pytest-twisted, which installs a reactor in every pytest
process it is loaded into.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "scrapy-focus-compat"

# Scrapy's tests of the four contracts we replace: the cache storage (through our
# storage classes in scrapy_tests/), the scheduler, crawls and the engine, fingerprints.
SUITE = [
    "tests/test_focus_httpcache.py",
    "tests/test_scheduler.py",
    "tests/test_scheduler_base.py",
    "tests/test_crawl.py",
    "tests/test_engine.py",
    "tests/test_engine_loop.py",
    "tests/test_engine_download.py",
    "tests/test_engine_close_spider.py",
    "tests/test_engine_stop_download_bytes.py",
    "tests/test_engine_stop_download_headers.py",
    "tests/test_utils_request.py",
]


def scrapy_sdist(release: str) -> Path:
    """The sdist of Scrapy *release*, downloaded once into the cache."""
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / f"scrapy-{release}.tar.gz"
    if not archive.exists():
        subprocess.run(
            [
                sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--no-binary", ":all:", "--disable-pip-version-check",
                f"scrapy=={release}", "--dest", str(CACHE),
            ],
            check=True,
        )  # fmt: skip
    if not archive.exists():
        raise SystemExit(f"pip downloaded no {archive.name} into {CACHE}")
    return archive


def unpack(archive: Path, into: Path) -> Path:
    """Unpack *archive* (data only: no links out, no special files) into *into*."""
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    (root,) = into.iterdir()
    return root


def main(pytest_args: list[str]) -> int:
    release = version("scrapy")
    with tempfile.TemporaryDirectory(prefix="scrapy-compat-") as tmp:
        root = unpack(scrapy_sdist(release), Path(tmp))
        for module in (HERE / "scrapy_tests").glob("test_*.py"):
            shutil.copy(module, root / "tests" / module.name)
        env = {**os.environ, "PYTHONPATH": str(HERE)}
        command = [
            sys.executable, "-m", "pytest", "-p", "focus_compat", "-p", "no:cacheprovider",
            "-q", *(() if any(a.startswith("tests/") for a in pytest_args) else SUITE),
            *pytest_args,
        ]  # fmt: skip
        print(f"Scrapy {release}'s tests with scrapy-focus's components, in {root}", flush=True)
        return subprocess.run(command, cwd=root, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
