"""The fragmenter's stop rules, on a simulated machine (its chunks and the kernel's counts stand in): another
process freeing blocks for a while, or the kernel handing over memory, does not make it give up; only a count
that reaches no new low for five chunks while no memory is handed over does."""

from __future__ import annotations

import pytest

from hugebench.system import fragmenter


class Machine:
    """Free 2 MiB blocks and MemTotal; each chunk takes blocks, ``refill`` gives some back right after."""

    def __init__(self, free: int, refill, total_growth=lambda chunk: 0):
        self.free, self.total, self.chunks = free, 24 << 30, 0
        self.refill, self.total_growth = refill, total_growth

    def take_chunk(self, blocks: int, movable: bool = False) -> int:
        taken = min(blocks, self.free)
        self.chunks += 1
        self.free += self.refill(self.chunks) - taken
        self.total += self.total_growth(self.chunks)
        return taken


@pytest.fixture
def machine(monkeypatch):
    def install(m: Machine) -> Machine:
        monkeypatch.setattr(fragmenter, "take_chunk", m.take_chunk)
        monkeypatch.setattr(fragmenter, "free_huge_blocks", lambda host=None: m.free)
        monkeypatch.setattr(fragmenter.kernel, "mem_total", lambda host=None: m.total)
        return m

    return install


def test_a_neighbour_freeing_as_fast_for_four_chunks_does_not_stop_it(machine):
    """What stopped a CI run at 1 203 of 7 082 blocks: a few chunks in a row not lower than the one before."""
    m = machine(Machine(1000, lambda chunk: 100 if chunk <= 4 else 0))
    report = fragmenter.fragment(0, 10**6, 100, 60.0)
    assert report["stopped"] == "level reached" and m.free == 0


def test_a_neighbour_freeing_as_fast_for_good_stops_it_after_five_chunks(machine):
    m = machine(Machine(1000, lambda chunk: 100))
    report = fragmenter.fragment(0, 10**6, 100, 60.0)
    assert report["stopped"].startswith("no progress: 5 chunks in a row"), report
    assert m.chunks == 5 and report["free_2mib_blocks"] == 1000


def test_memory_the_kernel_hands_over_counts_as_progress(machine):
    """deferred_init=lazy: the buddy count stays flat while sections are handed over (MemTotal grows)."""
    m = machine(Machine(1000, lambda chunk: 100 if chunk <= 20 else 0, lambda chunk: 128 << 20))
    report = fragmenter.fragment(0, 10**6, 100, 60.0)
    assert report["stopped"] == "level reached" and m.chunks > 20
