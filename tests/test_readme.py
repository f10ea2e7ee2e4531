"""The README's two commands work as written, and CI runs what the README says."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from scrapy_focus import settings as focus_settings
from scrapy_focus.corpus.reader import Corpus

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CI_RUN = ROOT / ".ci" / "run"
MAIN_JOB = "bash .ci/setup && bash example_project/run_offline.sh"
TEST_COMMAND_MARKER = "<!-- test command"


def readme_main_job() -> str:
    """The first command of the README: set up, then run the offline main job."""
    for line in README.read_text().splitlines():
        if line.strip().startswith("bash .ci/setup"):
            return line.strip()
    raise AssertionError("README.md has no `bash .ci/setup ...` command")


def readme_test_command() -> str:
    """The line of the fenced block right after the README's test-command marker."""
    lines = README.read_text().splitlines()
    starts = [n for n, line in enumerate(lines) if line.strip().startswith(TEST_COMMAND_MARKER)]
    assert len(starts) == 1, f"README.md needs exactly one {TEST_COMMAND_MARKER!r} marker"
    fence, command, end = (line.strip() for line in lines[starts[0] + 1 : starts[0] + 4])
    assert fence.startswith("```") and end == "```", "the marker must precede a one-line block"
    return command


def ci_test_command() -> str:
    """The one line of .ci/run that runs pytest, without its `|| status=$?`."""
    found = [
        line.strip()
        for line in CI_RUN.read_text().splitlines()
        if "pytest" in line and not line.lstrip().startswith(("#", "echo"))
    ]
    assert len(found) == 1, f".ci/run should run pytest on exactly one line, found {found}"
    return found[0].split("||")[0].strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_main_job(workdir: Path, port: int, max_pages: int) -> subprocess.CompletedProcess[str]:
    command = MAIN_JOB.split("&&", 1)[1].strip()  # .ci/setup is CI's own first step
    return subprocess.run(
        shlex.split(command),
        cwd=workdir,
        env={**os.environ, "MAX_PAGES": str(max_pages), "PORT": str(port)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_readme_main_job_is_setup_then_the_offline_crawl():
    assert readme_main_job() == MAIN_JOB


def test_offline_main_job_is_a_focused_crawl_of_the_python_docs(tmp_path):
    # A copy of the example project beside a .venv (the one running these tests),
    # so the crawl leaves the repository's own example_project/ alone.
    shutil.copytree(
        ROOT / "example_project",
        tmp_path / "example_project",
        ignore=shutil.ignore_patterns(".scrapy", "pages.jsonl", "report.html", "__pycache__"),
    )
    (tmp_path / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    port = free_port()
    project = tmp_path / "example_project"

    first = run_main_job(tmp_path, port, max_pages=30)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-5000:]
    assert "Spider closed (focus_max_pages)" in first.stderr
    items = [json.loads(line) for line in (project / "pages.jsonl").read_text().splitlines()]
    # Every page fetched is a line, whatever its verdict; and FOCUS_MAX_PAGES is not
    # passed although a response spends seconds in the downloader middlewares (the
    # ladder's verdict, the corpus) after it has left the wire.
    assert len(items) == 30
    start_url = f"http://127.0.0.1:{port}/"
    assert all(item["url"].startswith(start_url) for item in items)
    assert all(item["status"] == 200 for item in items)
    assert {item["state"] for item in items} <= {"accepted", "rejected"}  # a new corpus
    assert not any("/genindex" in item["url"] for item in items)  # the job file's scope
    by_url = {item["url"]: item for item in items}
    assert "3.11.2" in by_url[start_url]["title"]
    assert by_url[start_url]["depth"] == 0 and by_url[start_url]["link_score"] == 1.0
    # Focused: the asyncio pages are found within the first 30, and score as relevant.
    asyncio_pages = [item for item in items if "/library/asyncio" in item["url"]]
    assert len(asyncio_pages) >= 5
    assert sum(item["relevance"] >= 0.5 for item in asyncio_pages) >= len(asyncio_pages) / 2

    # The stats of the corpus it built, as `scrapy focus-corpus stats` prints them.
    stats = dict(
        line.split(None, 1) for line in first.stdout.splitlines() if re.match(r"^[a-z]+ {2}", line)
    )
    corpus_dir = project / ".scrapy" / "httpcache" / "focus"
    assert Path(stats["corpus"]) == corpus_dir
    with Corpus(corpus_dir) as corpus:
        assert int(stats["pages"]) == len(corpus) >= len(items)
        assert corpus.page(start_url) is not None
    # The one-line harvest summary, counted from pages.jsonl.
    harvest = re.search(r"^harvest: (\d+) of (\d+) pages on the topic", first.stdout, re.MULTILINE)
    assert harvest is not None, first.stdout
    relevant = sum(1 for item in items if (item["relevance"] or 0) >= 0.5)
    assert (int(harvest[1]), int(harvest[2])) == (relevant, len(items))

    # The report it ends with, where the script says it is.
    report = project / "report.html"
    assert f"report written to {report}" in first.stderr
    assert "focus_max_pages" in report.read_text()

    # The docs server was stopped with the script.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()

    # Run again: what the corpus holds is served from it, not fetched, and found unchanged.
    second = run_main_job(tmp_path, port, max_pages=10)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-5000:]
    again = [json.loads(line) for line in (project / "pages.jsonl").read_text().splitlines()]
    start_again = {item["url"]: item for item in again}[start_url]
    assert start_again["state"] == by_url[start_url]["state"].replace("accepted", "unchanged")
    assert start_again["fetched_at"] == by_url[start_url]["fetched_at"]  # when it was fetched


def test_ci_runs_exactly_the_readme_test_command():
    assert readme_test_command() == ci_test_command()
    assert readme_test_command().startswith(".venv/bin/python -m pytest")
    lines = [line.strip() for line in CI_RUN.read_text().splitlines()]
    assert lines.index("bash .ci/setup") < next(
        n for n, line in enumerate(lines) if line.startswith(ci_test_command())
    )


@pytest.mark.parametrize(
    ("pytest_exit", "compat_exit", "ci_exit"),
    [(0, 0, 0), (1, 0, 1), (2, 0, 2), (5, 0, 1), (0, 3, 3), (1, 3, 1)],
)
def test_ci_run_fails_when_tests_fail_or_none_ran(tmp_path, pytest_exit, compat_exit, ci_exit):
    # .ci/run against stand-ins: a setup that does nothing, a "python" that exits as
    # told, and a compatibility job that exits as told.
    (tmp_path / ".ci").mkdir()
    shutil.copy(CI_RUN, tmp_path / ".ci" / "run")
    (tmp_path / ".ci" / "setup").write_text("true\n")
    (tmp_path / ".ci" / "compat").write_text(f"exit {compat_exit}\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    python = tmp_path / ".venv" / "bin" / "python"
    python.write_text(f"#!/bin/sh\nexit {pytest_exit}\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    proc = subprocess.run(["bash", ".ci/run"], cwd=tmp_path, capture_output=True, check=False)
    assert proc.returncode == ci_exit


@pytest.mark.parametrize("document", ["README.md", *sorted(p.name for p in DOCS.glob("*.md"))])
def test_every_focus_setting_the_docs_name_exists(document):
    path = ROOT / document if document == "README.md" else DOCS / document
    named = set(re.findall(r"\bFOCUS_[A-Z_]+[A-Z]\b", path.read_text()))
    assert named <= set(focus_settings.defaults()), named - set(focus_settings.defaults())


def test_readme_settings_table_gives_the_real_defaults():
    rows = re.findall(r"^\| `(FOCUS_[A-Z_]+)` \| `([^`]+)` \|", README.read_text(), re.MULTILINE)
    assert len(rows) >= 9
    defaults = focus_settings.defaults()
    for name, cell in rows:
        shown = eval(cell, {"__builtins__": {}})  # our own README: a Python expression
        if isinstance(shown, list) and ... in shown:  # a list shown in part: its first items
            head = [value for value in shown if value is not ...]
            assert head == defaults[name][: len(head)], name
        else:
            assert shown == defaults[name], name
