"""Suite 4 for Codex, hostile inputs: whatever sits in Codex's sessions folder, Postrun says one
line about it and stores the sessions next to it normally.

One sessions folder holds the real cases and, next to them, rollouts of every bad shape:
lines that are not JSON, objects of the wrong type at every level, a 20 MB line, nesting
deeper than the parser takes, invalid UTF-8, lone surrogates, NUL, a rollout that is junk
from its first line, a FIFO where a rollout should be, sub-agent rollouts that are FIFOs or
symlinks leading out of the folder, unsafe names, a bad zstd frame. The real `postrun ingest`
and `postrun capture --once` go over it (bounded by a timeout: a hang fails the test), and:

- a rollout that cannot be a session gets exactly one line naming it; one with a good first
  line is stored, its bad lines skipped; names that are not rollouts are skipped silently,
  and no raw newline or terminal escape from a name reaches the output;
- never a traceback or an internal error;
- the real sessions hold exactly the records a clean folder gives.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_postrun
from tests.reliability.kit import differences, isolated_env, read_records, store_problems
from tests.support.codex_rollouts import RolloutWriter

TIMEOUT = 240
REAL = sorted(path for path in (FIXTURES / "codex-real").iterdir() if path.is_dir())


@dataclass
class Hostile:
    root: Path
    good: list[str]  # the real sessions
    stored: list[str]  # bad rollouts with a good first line: stored, bad lines skipped
    failing: dict[str, str]  # file name -> what its one line must say


def _tid(number: int) -> str:
    return f"0badbad0-0000-7000-8000-{number:012x}"


def _odd_lines(thread_id: str) -> bytes:
    """A rollout whose records have every field of the wrong type, among junk lines."""
    writer = RolloutWriter(thread_id)
    writer.begin("t1")
    writer.user("u1", "go", "t1")
    lines = [
        writer.data(),
        b"not json at all\n",
        b"\xff\xfe\x00 invalid utf-8\n",
        b"[" * 5000 + b"]" * 5000 + b"\n",  # deeper than the parser goes
        b'{"type":"event_msg","payload":"a string"}\n',
        b'{"type":"event_msg","payload":{"type":"item_completed","item":[1,2]}}\n',
        b'{"type":"event_msg","payload":{"type":"item_completed","turn_id":5,"item":{"type":"CommandExecution",'
        b'"id":7,"command":{"x":1},"exit_code":"3","aggregated_output":["a"],"status":{"y":2}}}}\n',
        b'{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"FileChange","id":"p1",'
        b'"changes":{"":{"type":"add"},"/x":"text","/y":{"type":"delete","content":5}}}}}\n',
        b'{"type":"response_item","payload":{"type":"function_call","name":7,"arguments":"{not json",'
        b'"call_id":["c"]}}\n',
        b'{"type":"response_item","payload":{"type":"function_call_output","call_id":"c9","output":{"a":1}}}\n',
        b'{"type":"token_usage_record","payload":{"response_id":5,"usage":{"input_tokens":"9","output_tokens":-4}}}\n',
        b'{"type":"event_msg","payload":{"type":"task_started","turn_id":{"t":1}}}\n',
        b'{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u9",'
        b'"content":[{"type":"text","text":"half \\ud800 a surrogate and a NUL \\u0000"}]}}}\n',
        b'{"type":"turn_context","payload":{"approval_policy":["never"],"cwd":7}}\n',
        b'{"type":7,"payload":{}}\n',
        b'{"timestamp":"yesterday","type":"compacted","payload":{"message":{"not":"text"}}}\n',
    ]
    return b"".join(lines)


def make_hostile(base: Path) -> Hostile:
    root = base / "sessions"
    good: list[str] = []
    for case in REAL:
        shutil.copytree(case / "sessions", root, dirs_exist_ok=True)
        good.extend(json.loads((case / "expect.json").read_text())["sessions"])
    day = root / "2026" / "12" / "02"
    day.mkdir(parents=True)
    stored: list[str] = []
    failing: dict[str, str] = {}

    def name(number: int, suffix: str = ".jsonl") -> str:
        return f"rollout-2026-12-02T10-00-00-{_tid(number)}{suffix}"

    (day / name(1)).write_bytes(_odd_lines(_tid(1)))
    stored.append(_tid(1))
    huge = RolloutWriter(_tid(2))
    huge.begin("t1")
    huge.user("u1", "print a lot", "t1")
    huge.command("c1", "yes | head", "t1", output="y\n" * (10 * 2**20))
    (day / name(2)).write_bytes(huge.data())
    stored.append(_tid(2))
    (day / name(3)).write_bytes(b"hello\nworld\n[1, 2]\n")
    failing[name(3)] = "not a Codex rollout: its first line is not a session_meta record"
    os.mkfifo(day / name(4))
    failing[name(4)] = "not a regular file"
    (day / name(5, ".jsonl.zst")).write_bytes(b"\x28\xb5\x2f\xfd not a frame")
    failing[name(5, ".jsonl.zst")] = "cannot decompress"
    # Sub-agents of every bad kind around a good root thread.
    parent = RolloutWriter(_tid(6))
    parent.begin("t1")
    parent.user("u1", "delegate", "t1")
    parent.spawn("s1", "t1", _tid(7), "Dirac", "sub")
    (day / name(6)).write_bytes(parent.data())
    stored.append(_tid(6))
    os.mkfifo(day / name(8))  # a sub-agent's, for all anyone can tell: it cannot be read
    failing[name(8)] = "not a regular file"
    outside = base / "outside.jsonl"
    outside.write_bytes(RolloutWriter(_tid(9), parent=_tid(6)).data())
    os.symlink(outside, day / name(9))
    failing[name(9)] = "a symlink that leads outside its sessions folder"
    # Names that are not rollouts: skipped without a word, whatever they hold.
    (day / "bad\nname.jsonl").write_text("{}\n")
    (root / "\x1b[31mred").mkdir()
    (day / f"rollout-x-{_tid(10)}.jsonl.tmp").write_text("{}\n")
    (day / ".hidden.jsonl").write_text("{}\n")
    return Hostile(root, good, stored, failing)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    return make_hostile(tmp_path_factory.mktemp("hostile"))


def assert_clean(text: str) -> None:
    assert "Traceback" not in text and "internal error" not in text, text[-3000:]
    assert "\x1b" not in text and "bad\nname" not in text, "a name's raw control character reached the output"


def assert_stored(hostile: Hostile, db: Path, tmp_path: Path, env: dict[str, str]) -> None:
    found = read_records(db)
    assert sorted(found) == sorted([*hostile.good, *hostile.stored])
    # The real sessions ingested alone, by id from the same folder, into a store of their own.
    reference_db = tmp_path / "reference.db"
    alone = dict(env, POSTRUN_DB=str(reference_db), POSTRUN_CODEX_DIR=str(hostile.root))
    result = run_postrun("ingest", "--agent", "codex", *hostile.good, env=alone)
    assert result.returncode == 0, result.stderr
    reference = read_records(reference_db)
    assert differences({key: found[key] for key in hostile.good}, reference) == []
    assert store_problems(db) == []
    assert len(found[_tid(1)].steps) >= 2  # the good lines among the junk
    actors = [json.loads(record)["id"] for _, record in found[_tid(6)].actors]
    assert actors == ["root"]  # the sub-agent's rollout cannot be read: no actor of it


def test_postrun_ingest_over_hostile_codex_files(hostile: Hostile, tmp_path: Path) -> None:
    env = isolated_env(tmp_path) | {"POSTRUN_DB": str(tmp_path / "store" / "postrun.db")}
    result = run_postrun("ingest", "--agent", "codex", str(hostile.root), env=env, timeout=TIMEOUT)
    assert result.returncode == 1
    assert_clean(result.stdout + result.stderr)
    ingested = {line.split()[3].rstrip(":") for line in result.stdout.splitlines() if line.startswith("ingested")}
    assert ingested == {*hostile.good, *hostile.stored}, result.stdout
    lines = result.stderr.splitlines()
    for name, reason in hostile.failing.items():
        mine = [line for line in lines if f"/{name}" in line]
        assert len(mine) == 1 and reason in mine[0], (name, mine)
    assert len(lines) == len(hostile.failing), lines
    assert_stored(hostile, Path(env["POSTRUN_DB"]), tmp_path, env)


def test_capture_once_over_hostile_codex_files(hostile: Hostile, tmp_path: Path) -> None:
    env = isolated_env(tmp_path) | {
        "POSTRUN_DB": str(tmp_path / "store" / "postrun.db"),
        "POSTRUN_AGENTS": "codex",
        "POSTRUN_CODEX_DIR": str(hostile.root),
    }
    result = run_postrun("capture", "--once", env=env, timeout=TIMEOUT)
    assert_clean(result.stdout + result.stderr)
    log = result.stderr.splitlines()
    for name, reason in hostile.failing.items():
        mine = [line for line in log if f"/{name}" in line]
        assert len(mine) == 1 and reason in mine[0], (name, mine)
    assert_stored(hostile, Path(env["POSTRUN_DB"]), tmp_path, env)
