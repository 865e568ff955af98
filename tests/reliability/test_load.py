"""Suite 3, load: many sessions rewritten at once while new ones appear and readers read.

Some of the sessions have a sub-agent whose own transcript is rewritten too.

50 sessions are rewritten concurrently every 200 ms for the run's duration (20 s in CI, a
minute with ``--slow``), the way Cline rewrites them: whole, in place (sometimes by a
temp file and a rename), mostly growing, sometimes with an earlier step changed, a
checkpoint restored (steps disappear) or the session ended and resumed. New sessions
appear meanwhile. Another process lists the sessions and exports one in a loop the whole
time. Then:

- no lost update: once the writers stop, the capture's store converges to exactly the
  records a one-shot ``postrun ingest`` of the final files gives;
- no reader error: every list and export succeeded, and every export was a valid v1.2
  envelope (readers see whole transactions, never a half-written session);
- no lock timeout and no error in the capture's log.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from tests.conftest import run_postrun
from tests.reliability.kit import Synthetic, differences, one_shot, read_records, store_problems, synthetic_id
from tests.support import v12check
from tests.support.capture_process import CaptureProcess

SESSIONS = 50
PERIOD = 0.2  # every session is rewritten this often
WRITERS = 5
NEW_SESSION_EVERY = 1.0


@dataclass
class Rotation:
    """Sessions one writer thread owns; new ones join while the run goes on."""

    sessions: list[Synthetic]
    lock: threading.Lock = field(default_factory=threading.Lock)
    writes: int = 0


def rewrite(session: Synthetic, root: Path, rng: random.Random) -> None:
    """One change of one session, as Cline makes them."""
    roll = rng.random()
    if roll < 0.05:
        session.restore()  # a checkpoint restore: steps disappear
    elif roll < 0.15:
        session.edit_earlier()
    elif roll < 0.20:
        session.status = "completed" if session.status == "running" else "running"
    else:
        session.grow()
    if rng.random() < 0.1:
        folder = root / session.session_id
        for name, document in (
            (f"{session.session_id}.messages.json", session.document()),
            (f"{session.session_id}.json", session.manifest()),
        ):
            temp = folder / f"{name}.{os.getpid()}.tmp"
            temp.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
            os.replace(temp, folder / name)
    else:
        session.write(root)


def writer(rotation: Rotation, root: Path, seed: int, deadline: float, failures: list[str]) -> None:
    rng = random.Random(seed)
    next_tick = time.monotonic()
    try:
        while time.monotonic() < deadline:
            with rotation.lock:
                sessions = list(rotation.sessions)
            for session in sessions:
                rewrite(session, root, rng)
                rotation.writes += 1
            next_tick += PERIOD
            time.sleep(max(0.0, next_tick - time.monotonic()))  # the writer's own rhythm, not a wait
    except Exception as exc:  # noqa: BLE001 - reported by the test thread
        failures.append(f"writer: {type(exc).__name__}: {exc}")


def creator(rotations: list[Rotation], root: Path, deadline: float, failures: list[str]) -> None:
    """A new session folder every second: the folder, its messages file, then its manifest."""
    index = SESSIONS
    try:
        while time.monotonic() + NEW_SESSION_EVERY < deadline:
            time.sleep(NEW_SESSION_EVERY)  # the pace of new sessions, not a wait
            index += 1
            session = Synthetic(synthetic_id(index), seed=index, with_helper=index % 4 == 0)
            (root / session.session_id).mkdir()
            session.write(root, manifest=False)
            session.write(root)
            rotation = rotations[index % len(rotations)]
            with rotation.lock:
                rotation.sessions.append(session)
    except Exception as exc:  # noqa: BLE001 - reported by the test thread
        failures.append(f"creator: {type(exc).__name__}: {exc}")


@dataclass
class Reader:
    """Another process that lists and exports in a loop (each call a real `postrun` process)."""

    env: dict[str, str]
    seed: int
    failures: list[str] = field(default_factory=list)
    lists: int = 0
    exports: int = 0

    def run(self, stop: threading.Event) -> None:
        rng = random.Random(self.seed)
        while not stop.is_set():
            listed = run_postrun("sessions", "--json", env=self.env, timeout=60)
            if listed.returncode != 0 or listed.stderr:
                self.failures.append(f"sessions: exit {listed.returncode}: {listed.stderr.strip()}")
                continue
            self.lists += 1
            sessions = json.loads(listed.stdout)
            if not sessions:
                continue
            chosen = rng.choice(sessions)["id"]
            exported = run_postrun("export", chosen, "--format", "json", env=self.env, timeout=60)
            if exported.returncode != 0 or exported.stderr:
                self.failures.append(f"export {chosen}: exit {exported.returncode}: {exported.stderr.strip()}")
                continue
            problems = v12check.problems(json.loads(exported.stdout))
            if problems:
                self.failures.append(f"export {chosen}: {problems[:3]}")
            self.exports += 1


def load_test(tmp_path: Path, env: dict[str, str], seconds: float) -> None:
    root = tmp_path / "cline" / "sessions"
    db = Path(env["POSTRUN_DB"])
    env = env | {"POSTRUN_CLINE_DIR": str(root), "POSTRUN_DEBOUNCE_SECONDS": "0.1", "POSTRUN_POLL_SECONDS": "0.5"}
    # Every fifth session has a sub-agent whose transcript is rewritten with the lead's.
    sessions = [Synthetic(synthetic_id(index), seed=index, with_helper=index % 5 == 0) for index in range(SESSIONS)]
    for session in sessions:
        for _ in range(10):
            session.grow()
        session.write(root)
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(rf"cline: caught up with {SESSIONS} sessions", timeout=60)
        rotations = [Rotation(sessions[number::WRITERS]) for number in range(WRITERS)]
        failures: list[str] = []
        reader = Reader(env, seed=1)
        stop_reading = threading.Event()
        deadline = time.monotonic() + seconds
        threads = [
            threading.Thread(target=writer, args=(rotation, root, number, deadline, failures), name=f"writer-{number}")
            for number, rotation in enumerate(rotations)
        ]
        threads.append(threading.Thread(target=creator, args=(rotations, root, deadline, failures), name="creator"))
        reading = threading.Thread(target=reader.run, args=(stop_reading,), name="reader")
        for thread in [*threads, reading]:
            thread.start()
        for thread in threads:
            thread.join(seconds + 30)
        stop_reading.set()
        reading.join(120)
        assert failures == []
        writes = sum(rotation.writes for rotation in rotations)
        total = sum(len(rotation.sessions) for rotation in rotations)
        print(f"{writes} rewrites of {total} sessions in {seconds:g} s; {reader.lists} lists, {reader.exports} exports")
        assert writes >= SESSIONS * seconds / PERIOD * 0.5, "the writers fell far behind their rhythm"
        assert total > SESSIONS
        assert reader.failures == []
        assert reader.exports >= 3, "the reader hardly ran"
        # No lost update: the store converges to a one-shot ingest of the final files.
        expected = one_shot(root, tmp_path / "one-shot" / "postrun.db", env)
        assert len(expected) == total

        def converged() -> bool:
            return differences(read_records(db), expected) == []

        try:
            capture.wait_until(converged, what="the store to equal a one-shot ingest of the final files", timeout=60)
        except AssertionError:
            raise AssertionError(f"{differences(read_records(db), expected)}\n{capture.log()[-5000:]}") from None
        assert store_problems(db) == []
        live = len(capture.lines(r" INFO cline (ingested|updated) .* on (event|poll) "))
        torn = len(capture.lines(r" file not parseable yet "))
        print(f"capture: {live} live ingests, {torn} files caught mid-write")
        assert live >= total, "capture hardly ingested while the sessions changed"
        assert capture.lines(r" (ERROR|WARNING) ") == []
        assert capture.lines(r"locked|internal error|Traceback") == []
        code, elapsed = capture.stop(signal.SIGTERM)
        assert code == 0 and elapsed < 5
    finally:
        capture.kill()


def test_fifty_sessions_rewritten_every_200_ms(tmp_path: Path, env: dict[str, str]) -> None:
    load_test(tmp_path, env, seconds=20)


@pytest.mark.slow
def test_fifty_sessions_rewritten_every_200_ms_for_a_minute(tmp_path: Path, env: dict[str, str]) -> None:
    load_test(tmp_path, env, seconds=60)
