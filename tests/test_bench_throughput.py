"""The throughput benchmark's own machinery (benchmarks/bench_throughput.py and
cpu_profile.py): the baselines' crawl order, and the CPU-time profile split by part."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import cpu_profile  # noqa: E402
from bench_throughput import RunSpec, command_for  # noqa: E402


def _settings(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "-s"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_plain_baselines_crawl_breadth_first_as_the_frontier_does(tmp_path):
    for kind in ("plain", "naive"):
        command = command_for(RunSpec(kind, kind), "http://127.0.0.1:1/", "t", 1000, tmp_path)
        settings = _settings(command)
        assert settings["DEPTH_PRIORITY"] == "1"
        assert settings["SCHEDULER_MEMORY_QUEUE"] == "scrapy.squeues.FifoMemoryQueue"
    depth_first = RunSpec("plain, depth-first", "plain", {"DEPTH_PRIORITY": "0"})
    command = command_for(depth_first, "http://127.0.0.1:1/", "t", 1000, tmp_path)
    assert _settings(command)["DEPTH_PRIORITY"] == "0"  # a variant's settings win


def test_each_sample_goes_to_the_first_part_on_its_stack():
    stacks = {
        ("_run_once (asyncio/base_events.py:1)", "enqueue_request (scrapy_focus/x.py:1)"): 3,
        ("_run_once (asyncio/base_events.py:1)", "_readOrWrite (twisted/internet/a.py:1)"): 1,
        ("<module> (scrapy/__init__.py:1)",): 4,
    }
    parts = cpu_profile.split_by_part(stacks)  # type: ignore[arg-type]
    assert parts["scheduler: enqueue (admission, score, store)"] == 3
    assert parts["network I/O"] == 1
    assert parts[cpu_profile.OTHER] == 4


def test_the_sampler_records_a_process_cpu_and_the_table_scales_it(tmp_path):
    out = tmp_path / "timeit.txt"
    code = "sum(i * i for i in range(2000))"
    command = [sys.executable, str(BENCHMARKS / "cpu_profile.py"), "run", str(out)]
    subprocess.run([*command, "-m", "timeit", "-n", "3000", code], check=True, capture_output=True)
    stacks = cpu_profile.read(out)
    assert sum(stacks.values()) > 10  # samples of CPU time, each about a millisecond
    assert any("<genexpr>" in frame for frames in stacks for frame in frames)
    table = cpu_profile.parts_table([("run", [(out, 2.0)])])
    assert table.splitlines()[-1] == "| total | 2.00 |"
    assert f"| {cpu_profile.OTHER} | 2.00 |" in table  # no reactor: all of it start-up/other
