"""The repository root, put on ``sys.path`` for a benchmark run as a script.

``python benchmarks/bench_x.py`` puts benchmarks/ on ``sys.path``, not the root.
A benchmark imports this module before ``harness`` and ``scrapy_focus``, so that
both come from this checkout (a path entry wins over the editable install's
finder, which may point at another checkout).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
