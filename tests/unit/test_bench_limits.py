"""The benchmarks' time limits stretch with the machine's load (``bench/_limits.py``; pure logic).

The clock and the load average are given to :class:`Deadline` as functions, so these tests decide what
time it is and how busy the machine is: no sleeping, no real load.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _limits import MAX_STRETCH, Deadline, load_factor


class Machine:
    """A fake clock and load average."""

    def __init__(self, load: float) -> None:
        self.now = 1000.0
        self.load = load

    def clock(self) -> float:
        return self.now

    def loadavg(self) -> float:
        return self.load


@pytest.mark.parametrize(
    ("load", "cores", "factor"),
    [(0.3, 2, 1.0), (2.0, 2, 1.0), (4.0, 2, 2.0), (6.0, 2, 3.0), (50.0, 2, MAX_STRETCH), (4.0, 8, 1.0)],
)
def test_the_load_factor_is_the_load_per_core_between_1_and_the_cap(
    load: float, cores: int, factor: float
) -> None:
    assert load_factor(lambda: load, cores) == factor


def test_a_quiet_machine_keeps_the_limit_as_written() -> None:
    machine = Machine(load=0.5)
    deadline = Deadline(90, load=machine.loadavg, cores=2, clock=machine.clock)
    machine.now += 89.5
    assert not deadline.expired()
    machine.now += 1
    assert deadline.expired()
    assert deadline.describe() == "90 s"


def test_a_busy_machine_stretches_the_limit_while_the_benchmark_runs() -> None:
    machine = Machine(load=1.0)
    deadline = Deadline(90, load=machine.loadavg, cores=2, clock=machine.clock)
    machine.now += 60
    machine.load = 6.0  # four `yes` processes started beside the benchmark
    assert deadline.remaining() == pytest.approx(270 - 60)
    machine.now += 100  # 160 s: past the written 90 s, well inside the stretched 270 s
    assert not deadline.expired()
    assert deadline.describe() == "90 s (x3.0 for the load: 270 s)"


def test_the_stretch_never_shrinks_when_the_load_drops_and_a_hang_is_still_stopped() -> None:
    machine = Machine(load=20.0)
    deadline = Deadline(90, load=machine.loadavg, cores=2, clock=machine.clock)
    assert deadline.limit == 90 * MAX_STRETCH
    machine.load = 0.1
    machine.now += 200
    assert deadline.limit == 90 * MAX_STRETCH  # a benchmark half done keeps the time it was given
    machine.now += 90 * MAX_STRETCH
    assert deadline.expired()
