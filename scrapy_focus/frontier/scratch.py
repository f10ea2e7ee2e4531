"""Where the frontier of a crawl without ``JOBDIR`` lives: a directory of this process.

Its name holds the process id, so the next crawl to start removes the
directories of crawls that were killed (a SIGKILL gives no chance to clean up)
and leaves those of crawls still running alone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_TEMPORARY_PREFIX = "focus-frontier-"


def temporary_directory() -> Path:
    """A store for a crawl without JOBDIR, named after this process; first removes the
    stores of crawls that were killed, which a SIGKILL gave no chance to clean up."""
    for stale in Path(tempfile.gettempdir()).glob(f"{_TEMPORARY_PREFIX}*-*"):
        owner = stale.name[len(_TEMPORARY_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{_TEMPORARY_PREFIX}{os.getpid()}-"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
