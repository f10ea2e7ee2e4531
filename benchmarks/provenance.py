"""What a benchmark report says about the code it measured (shared by the bench_* scripts)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def git_commit() -> str:
    """The commit measured, marked when scrapy_focus/ differs from it; "?" outside git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "scrapy_focus"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + (" with uncommitted changes in scrapy_focus/" if dirty else "")
