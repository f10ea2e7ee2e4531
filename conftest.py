"""The docs run as tests: every Python sample of README.md and docs/*.md, with Sybil.

Python samples are ```` ```python ```` blocks (plain code or ``>>>`` sessions).
```` ```console ```` blocks are shell sessions: each ``$ command`` is run, and
its output (stdout and stderr) must match the lines below it (``...`` matches
anything).  A block whose info string names a file, ```` ```toml file=job.toml ````
or ```` ```python file=flaky.py ````, is that file: it is written where the
shell samples run, and not executed.  ```` ```bash ```` blocks are shown, never
run.  ``<!-- skip: next -->`` skips the block after it.

README.md and docs/corpus.md find ``site``, ``project`` and ``corpus_dir`` ready:
a small site on 127.0.0.1 and the example project's crawl of it; their shell
samples run in ``project``.  Every other chapter finds ``farm_site`` (the test
farm, for the session) and ``workdir`` (a fresh directory of its own, where its
shell samples run, with ``$FARM`` set); docs/engines.md finds ``hostile_web`` (the
hostile sites, ``$HOSTILE_SPA``... in its shell samples) instead of the farm.  See
tests/docs_crawl.py.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import (
    ClearNamespaceParser,
    CodeBlockParser,
    PythonCodeBlockParser,
    SkipParser,
)
from sybil.sybil import SybilCollection

from tests.docs_crawl import (
    corpus_dir,
    docs_crawl,
    farm_site,
    hostile_web,
    project,
    site,
    workdir,
)

# fixtures, for pytest
__all__ = ["corpus_dir", "docs_crawl", "farm_site", "hostile_web", "project", "site", "workdir"]

ROOT = Path(__file__).parent
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


# -- console samples -----------------------------------------------------------------


def shell_dir(example: Example) -> Path:
    """Where a document's shell samples run: its workdir, else the crawled project."""
    namespace = example.namespace
    return Path(namespace.get("workdir") or namespace.get("project") or ROOT)


def run_console(example: Example) -> str | None:
    """Run each ``$ command`` of a console block; compare its output with the block's."""
    cwd = shell_dir(example)
    env = {
        **os.environ,
        # The scrapy of the Python running the tests comes first.
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "SITE": str(example.namespace.get("site", "")),
        "FARM": str(example.namespace.get("farm_site", "")),
        **hostile_env(example.namespace.get("hostile_web")),
        "LC_ALL": "C",  # the same sort order, messages and encoding everywhere
        # stdout and stderr interleave as in a terminal (a pipe would buffer stdout).
        "PYTHONUNBUFFERED": "1",
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


def hostile_env(web: object) -> dict[str, str]:
    """``HOSTILE_SPA=http://127.0.0.3:PORT``... for each site of the hostile web."""
    sites = getattr(web, "sites", {})
    return {f"HOSTILE_{name.upper()}": site.farm.base for name, site in sites.items()}


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


# -- file blocks -----------------------------------------------------------------------

_FILE_INFO = re.compile(r"\w+ file=(?P<name>[\w.-]+)")


class FileBlockParser(CodeBlockParser):
    """```` ```LANGUAGE file=NAME ````: write the block to NAME in the shell samples' directory."""

    def __init__(self) -> None:
        super().__init__(language="file", evaluator=write_file)

    def __call__(self, document: Document) -> Iterator[Region]:
        for region in self.lexers(document):
            match = _FILE_INFO.fullmatch(region.lexemes["arguments"].strip())
            if match:
                region.parsed = (match["name"], str(region.lexemes["source"]))
                region.evaluator = write_file
                yield region


def write_file(example: Example) -> str | None:
    name, text = example.parsed
    (shell_dir(example) / name).write_text(text, encoding="utf-8")
    return None


def parsers() -> list[object]:
    return [
        PythonCodeBlockParser(doctest_optionflags=DOCTEST_FLAGS),
        CodeBlockParser(language="console", evaluator=run_console),
        FileBlockParser(),
        SkipParser(),
        ClearNamespaceParser(),
    ]


CORPUS_DOCS = ["README.md", "docs/index.md", "docs/corpus.md"]
HOSTILE_DOCS = ["docs/engines.md"]

pytest_collect_file = SybilCollection(
    [
        Sybil(
            parsers=parsers(),
            patterns=CORPUS_DOCS,
            path=".",
            fixtures=["site", "project", "corpus_dir"],
        ),
        Sybil(
            parsers=parsers(),
            patterns=["docs/*.md"],
            excludes=CORPUS_DOCS + HOSTILE_DOCS,
            path=".",
            fixtures=["farm_site", "workdir"],
        ),
        Sybil(
            parsers=parsers(),
            patterns=HOSTILE_DOCS,
            path=".",
            fixtures=["hostile_web", "workdir"],
        ),
    ]
).pytest()
