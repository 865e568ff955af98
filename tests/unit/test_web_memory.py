"""BigPages: big page builds a few at a time, the heap trimmed once the last of a burst is done."""

from __future__ import annotations

import threading

from postrun.web.memory import BigPages


def test_builds_wait_their_turn_and_the_last_of_a_burst_trims() -> None:
    trims: list[int] = []
    pages = BigPages(at_once=2, trim=lambda: trims.append(len(trims)))
    inside = 0
    most = 0
    lock = threading.Lock()
    go = threading.Event()

    def build() -> None:
        nonlocal inside, most
        with pages.building():
            with lock:
                inside += 1
                most = max(most, inside)
            go.wait(10)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=build) for _ in range(6)]
    for thread in threads:
        thread.start()
    go.set()
    for thread in threads:
        thread.join(10)
    assert most == 2 and inside == 0
    assert trims == [0]  # one burst, one trim
    with pages.building():
        pass
    assert trims == [0, 1]


def test_a_failed_build_still_frees_its_turn_and_trims() -> None:
    trims: list[int] = []
    pages = BigPages(at_once=1, trim=lambda: trims.append(1))
    try:
        with pages.building():
            raise ValueError("boom")
    except ValueError:
        pass
    with pages.building():
        pass
    assert trims == [1, 1]
