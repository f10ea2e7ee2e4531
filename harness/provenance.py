"""What a benchmark report says about the code it measured (shared by the bench_* scripts)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def git(*args: str) -> str:
    """Output of ``git -C <repo> ARGS``; raises OSError or CalledProcessError."""
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def git_commit() -> str:
    """The commit measured, marked when scrapy_focus/ differs from it; "?" outside git."""
    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "scrapy_focus")
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + (" with uncommitted changes in scrapy_focus/" if dirty else "")
