"""The machine a benchmark ran on, as the one line its report opens with.

``machine()`` names the CPU model, the CPUs (and how many this process may use),
the RAM, the load average at the start and at the end of the run when the caller
took the first one, the system, Python and Scrapy; *extra* entries (another
library's version, the browsers) are appended in the order given.  Nothing here
imports scrapy_focus: a figure describes the machine, not the code measured
(:mod:`harness.provenance` names that).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable


def cpu_model() -> str:
    """The first ``model name`` of /proc/cpuinfo, else the architecture."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def load_text(load: Iterable[float]) -> str:
    """A load average as ``1.2/0.8/0.5`` (1, 5 and 15 minutes)."""
    return "/".join(f"{value:.1f}" for value in load)


def machine(load_at_start: tuple[float, ...] | None = None, extra: Iterable[str] = ()) -> str:
    """One line: CPUs, RAM, load (if *load_at_start*), system, Python, Scrapy, *extra*."""
    import scrapy

    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    parts = [
        f"{cpu_model()}, {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))})",
        f"{ram:.0f} GiB RAM",
    ]
    if load_at_start is not None:
        parts.append(
            f"load average (1/5/15 min) {load_text(load_at_start)} at the start and "
            f"{load_text(os.getloadavg())} at the end"
        )
    parts += [
        f"{platform.system()} {platform.release()}",
        f"Python {platform.python_version()}",
        f"Scrapy {scrapy.__version__}",
        *extra,
    ]
    return ", ".join(parts)
