"""Shared by the benchmarks: interleaved rounds, medians, ratios with their min-max."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence


def pin_one_core() -> None:
    """Run on one core so a figure is per core, not spread over both."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def conditions() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} cores, load average {load:.1f} at start"


def rate(corpus: Sequence[object], seconds: float, fn: Callable[[object], object]) -> float:
    """Items per second: whole passes over `corpus` until `seconds` have passed."""
    done = 0
    start = time.perf_counter()
    while True:
        for item in corpus:
            fn(item)
        done += len(corpus)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def interleaved(names: Sequence[str], rounds: int, measure: Callable[[str], float]) -> dict[str, list[float]]:
    """Measure every variant once per round, forward on even rounds and backward on odd ones."""
    results: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            results[name].append(measure(name))
    return results


def ratios(values: list[float], bases: list[float]) -> tuple[float, float, float]:
    """Median, min and max of the per-round ratios value/base (paired within a round)."""
    rs = [v / b for v, b in zip(values, bases, strict=True)]
    return statistics.median(rs), min(rs), max(rs)


def fmt_ratio(r: tuple[float, float, float]) -> str:
    return f"{r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f})"


def uptime() -> str:
    """The machine's `uptime` line (its load at the time), for the figures' record."""
    import subprocess

    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
