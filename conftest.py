"""The docs run as tests: every Python sample of README.md and docs/*.md, with Sybil.

Python samples are ```` ```python ```` blocks (plain code or ``>>>`` sessions).
```` ```console ```` blocks are shell sessions: each ``$ command`` is
run in the example project the docs crawled, and its output must match the
lines below it (``...`` matches anything).  ```` ```bash ```` blocks are shown,
never run.  ``<!-- skip: next -->`` skips the block after it.

Samples find ``site``, ``project`` and ``corpus_dir`` ready: a small site on
127.0.0.1 and the example project's crawl of it (tests/docs_crawl.py).
"""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from sybil import Example, Sybil
from sybil.parsers.markdown import (
    ClearNamespaceParser,
    CodeBlockParser,
    PythonCodeBlockParser,
    SkipParser,
)

from tests.docs_crawl import corpus_dir, docs_crawl, project, site

__all__ = ["corpus_dir", "docs_crawl", "project", "site"]  # fixtures, for pytest

ROOT = Path(__file__).parent
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


# -- console samples -----------------------------------------------------------------


def run_console(example: Example) -> str | None:
    """Run each ``$ command`` of a console block; compare its output with the block's."""
    cwd = example.namespace.get("project", ROOT)
    env = {
        **os.environ,
        # The scrapy of the Python running the tests comes first.
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "SITE": str(example.namespace.get("site", "")),
        "LC_ALL": "C",  # the same sort order, messages and encoding everywhere
    }
    checker = doctest.OutputChecker()
    for command, want in _console_steps(example.parsed):
        proc = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            return f"$ {command}\nexited with {proc.returncode}:\n{proc.stdout}"
        if not checker.check_output(want, proc.stdout, DOCTEST_FLAGS):
            return f"$ {command}\nexpected:\n{want}got:\n{proc.stdout}"
    return None


def _console_steps(text: str) -> Iterator[tuple[str, str]]:
    command: str | None = None
    want: list[str] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            if command is not None:
                yield command, "".join(want)
            command, want = line[2:], []
        elif command is not None:
            want.append(line + "\n")
    if command is not None:
        yield command, "".join(want)


pytest_collect_file = Sybil(
    parsers=[
        PythonCodeBlockParser(doctest_optionflags=DOCTEST_FLAGS),
        CodeBlockParser(language="console", evaluator=run_console),
        SkipParser(),
        ClearNamespaceParser(),
    ],
    patterns=["README.md", "docs/*.md"],
    path=".",
    fixtures=["site", "project", "corpus_dir"],
).pytest()
