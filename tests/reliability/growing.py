"""Suite 3's load run, for any agent whose files only grow: many sessions appended to at once
while readers read.

``SESSIONS`` sessions grow concurrently, a few lines every ``PERIOD`` each (sometimes a line
in two writes); new sessions appear meanwhile. Another process lists the sessions and
exports one in a loop the whole time. Then the capture's store converges to exactly what a
one-shot ``postrun ingest`` of the final files gives, no reader failed, and the capture
logged no error.
"""

from __future__ import annotations

import random
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.reliability.kit import differences, one_shot, read_records, store_problems
from tests.reliability.test_load import Reader
from tests.support.capture_process import CaptureProcess

SESSIONS = 30
PERIOD = 0.2


@dataclass
class Growing:
    """A session's files, copied line by line from their final version."""

    pending: dict[Path, list[bytes]]  # target -> the lines still to write
    sidecars: list[tuple[Path, Path]]  # (source, target) of files copied whole with their folder's first line
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        """The lead file's first lines (the session exists from then on)."""
        main = next(iter(self.pending))
        main.parent.mkdir(parents=True, exist_ok=True)
        with main.open("ab") as out:
            for _ in range(3):
                out.write(self.pending[main].pop(0))

    def step(self, rng: random.Random) -> int:
        """Append a few lines to one of its files; how many were written."""
        with self.lock:
            open_files = [path for path, lines in self.pending.items() if lines]
            if not open_files:
                return 0
            target = rng.choice(open_files)
            target.parent.mkdir(parents=True, exist_ok=True)
            for source, meta in self.sidecars:
                if meta.parent == target.parent and not meta.exists():
                    shutil.copyfile(source, meta)
            written = 0
            with target.open("ab") as out:
                for _ in range(rng.randint(1, 4)):
                    lines = self.pending[target]
                    if not lines:
                        break
                    line = lines.pop(0)
                    if rng.random() < 0.1:
                        out.write(line[: len(line) // 2])  # a line in two writes
                        out.flush()
                        out.write(line[len(line) // 2 :])
                    else:
                        out.write(line)
                    written += 1
            return written


def run_load(
    tmp_path: Path, env: dict[str, str], seconds: float, *, kind: str, root: Path, sessions: list[Growing]
) -> None:
    """Grow ``sessions`` (the first ``SESSIONS`` exist at the start, the rest appear) under
    ``root``, which ``env`` has the capture of ``kind`` watch."""
    db = Path(env["POSTRUN_DB"])
    env = env | {"POSTRUN_DEBOUNCE_SECONDS": "0.1", "POSTRUN_POLL_SECONDS": "0.5"}
    for session in sessions[:SESSIONS]:
        session.start()  # each exists when the capture starts
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(rf"{kind}: caught up with {SESSIONS} sessions", timeout=60)
        failures: list[str] = []
        writes = [0]
        deadline = time.monotonic() + seconds
        active = list(sessions[:SESSIONS])
        later = list(sessions[SESSIONS:])
        joining = threading.Lock()

        def writer(seed: int) -> None:
            rng = random.Random(seed)
            next_tick = time.monotonic()
            try:
                while time.monotonic() < deadline:
                    with joining:
                        if later and rng.random() < 0.05:
                            newcomer = later.pop()
                            newcomer.start()  # a new session appears
                            active.append(newcomer)
                        current = list(active)
                    for session in current:
                        writes[0] += session.step(rng)
                    next_tick += PERIOD
                    time.sleep(max(0.0, next_tick - time.monotonic()))  # the writer's rhythm, not a wait
            except Exception as exc:  # noqa: BLE001 - reported by the test thread
                failures.append(f"writer: {type(exc).__name__}: {exc}")

        reader = Reader(env, seed=1)
        stop_reading = threading.Event()
        threads = [threading.Thread(target=writer, args=(number,), name=f"writer-{number}") for number in range(3)]
        reading = threading.Thread(target=reader.run, args=(stop_reading,), name="reader")
        for thread in [*threads, reading]:
            thread.start()
        for thread in threads:
            thread.join(seconds + 30)
        stop_reading.set()
        reading.join(120)
        assert failures == [] and reader.failures == []
        rest = random.Random(2)
        for session in sessions:  # the files as the agent leaves them: complete
            if session in later:
                session.start()
            while session.step(rest):
                pass
        print(f"{writes[0]} lines appended in {seconds:g} s; {reader.lists} lists, {reader.exports} exports")
        assert reader.exports >= 3, "the reader hardly ran"
        expected = one_shot(root, tmp_path / "one-shot" / "postrun.db", env, agent=kind)
        assert len(expected) == len(sessions)

        def converged() -> bool:
            return differences(read_records(db), expected) == []

        try:
            capture.wait_until(converged, what="the store to equal a one-shot ingest of the final files", timeout=90)
        except AssertionError:
            raise AssertionError(f"{differences(read_records(db), expected)}\n{capture.log()[-5000:]}") from None
        assert store_problems(db) == []
        live = len(capture.lines(rf" INFO {kind} (ingested|updated) .* on (event|poll) "))
        print(f"capture: {live} live ingests")
        assert live >= len(sessions)
        assert capture.lines(r" (ERROR|WARNING) ") == []
        assert capture.lines(r"locked|internal error|Traceback") == []
        code, elapsed = capture.stop(signal.SIGTERM)
        assert code == 0 and elapsed < 5
    finally:
        capture.kill()
