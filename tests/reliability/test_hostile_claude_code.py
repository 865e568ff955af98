"""Suite 4 for Claude Code, hostile inputs: whatever sits in Claude's projects folder, Postrun
says one line about it and stores the sessions next to it normally.

One projects folder holds real sessions and, next to them, transcripts of every bad shape:
lines that are not JSON, objects of the wrong type at every level, a 20 MB line, nesting
deeper than the parser takes, invalid UTF-8, lone surrogates, NUL, a FIFO where a transcript
should be, sub-agent files and sidecars that are junk or FIFOs, symlinks that lead out of the
folder, unsafe names. The real `postrun ingest` and `postrun capture --once` go over it
(bounded by a timeout: a hang fails the test), and:

- a transcript that holds no record gets exactly one line naming it; one with some records
  is stored, its bad lines skipped; junk next to the sessions gets one warning each, with
  unsafe names escaped (no raw newline or terminal escape reaches the output);
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
from tests.support.claude_lines import Transcript, dumps, meta

TIMEOUT = 240
REAL = sorted(path for path in (FIXTURES / "claude-code-real").iterdir() if path.is_dir())
CWD = "/home/dev/work/hostile"
SLUG = "-home-dev-work-hostile"


@dataclass
class Hostile:
    root: Path
    good: list[str]  # the real sessions
    stored: list[str]  # bad transcripts with records among the junk: stored, bad lines skipped
    failing: dict[str, str]  # session id -> what its one line must say
    warned: list[str]  # the names each warning must name (escaped: \x0a by ingest, \n by capture's log)


def _sid(number: int) -> str:
    return f"bad0{number:04d}-0000-4000-8000-000000000000"


def _odd_lines(session_id: str) -> bytes:
    """A session whose records have every field of the wrong type, among junk lines."""
    t = Transcript(session_id, CWD)
    t.enqueue("go")
    t.prompt("go", promptId="p1")
    lines = [
        t.data(),
        b"not json at all\n",
        b"\xff\xfe\x00 invalid utf-8\n",
        b"[" * 5000 + b"]" * 5000 + b"\n",  # deeper than the parser goes
        b'{"type":"user","message":"a string"}\n',
        b'{"type":"user","message":{"content":[1,"x",null,{"type":"tool_result","tool_use_id":5}]}}\n',
        b'{"type":"assistant","message":{"content":5,"usage":"lots","id":7}}\n',
        b'{"type":"assistant","uuid":9,"timestamp":12,"message":{"id":"m1","usage":{"input_tokens":"9"},'
        b'"content":[{"type":"tool_use","id":"t1","name":7,"input":[1]},{"type":3},{"type":"text","text":5}]}}\n',
        b'{"type":"user","uuid":"u9","toolUseResult":[1],"permissionDecision":"yes","message":{"content":'
        b'[{"type":"tool_result","tool_use_id":"t1","content":{"odd":true},"is_error":"no"}]}}\n',
        b'{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"Bash",'
        b'"input":{"command":["rm"]}},{"type":"tool_use","id":"t3","name":"Read","input":{"file_path":""}}]}}\n',
        b'{"type":"user","message":{"content":"half \\ud800 a surrogate pair and a NUL \\u0000"},"uuid":"u10"}\n',
        b'{"type":"cost-state","totalCostUSD":"free"}\n',
        b'{"type":"cost-state","totalCostUSD":-1}\n',
        b'{"type":"system","subtype":"compact_boundary","parentUuid":[]}\n',
        b'{"type":7}\n',
    ]
    return b"".join(lines)


def make_hostile(base: Path) -> Hostile:
    root = base / "projects"
    good: list[str] = []
    for case in REAL:
        shutil.copytree(case / "claude" / "projects", root, dirs_exist_ok=True)
        good.extend(path.stem for path in (case / "claude" / "projects").glob("*/*.jsonl"))
    slug = root / SLUG
    slug.mkdir()
    stored, failing, warned = [], {}, []
    (slug / f"{_sid(1)}.jsonl").write_bytes(_odd_lines(_sid(1)))
    stored.append(_sid(1))
    huge = Transcript(_sid(2), CWD)
    huge.prompt("a very long prompt " + "x" * (20 * 2**20))
    huge.write(slug / f"{_sid(2)}.jsonl")
    stored.append(_sid(2))
    (slug / f"{_sid(3)}.jsonl").write_bytes(b"hello\nworld\n[1, 2]\n")
    failing[_sid(3)] = "not a Claude Code transcript (no line is a record)"
    os.mkfifo(slug / f"{_sid(4)}.jsonl")
    failing[_sid(4)] = "not a regular file"
    # Sub-agents of every bad kind around a good main transcript.
    parent = Transcript(_sid(5), CWD)
    parent.prompt("delegate", promptId="p5")
    parent.call("msg_1", "toolu_agent", "Agent", {"prompt": "x"})
    parent.write(slug / f"{_sid(5)}.jsonl")
    subagents = slug / _sid(5) / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-junk.jsonl").write_bytes(b"\x00\x01 junk\n")
    (subagents / "agent-junk.meta.json").write_text("[1, 2")
    os.mkfifo(subagents / "agent-fifo.jsonl")
    (subagents / "agent-good.meta.json").write_text(json.dumps(meta("toolu_agent", "Good")))
    helper = Transcript(_sid(5), CWD, agent_id="good")
    helper.prompt("x")
    helper.write(subagents / "agent-good.jsonl")
    os.mkfifo(subagents / "agent-good2.meta.json")
    outside = base / "outside.jsonl"
    outside.write_bytes(dumps({"type": "user", "message": {"content": "outside"}}))
    os.symlink(outside, subagents / "agent-evil.jsonl")
    (slug / _sid(5) / "tool-results").mkdir()
    os.mkfifo(slug / _sid(5) / "tool-results" / "out.txt")
    stored.append(_sid(5))
    failing[f"{_sid(5)}/subagents/agent-fifo.jsonl"] = "not a regular file"
    failing[f"{_sid(5)}/subagents/agent-evil.jsonl"] = "symlink to outside the projects folder"
    # Junk next to the sessions: each gets one warning.
    os.symlink(outside, slug / f"{_sid(6)}.jsonl")
    warned.append(f"{_sid(6)}.jsonl")
    (slug / "bad\nname.jsonl").write_text("{}\n")
    warned.append("bad\\x0aname.jsonl")
    (root / "\x1b[31mred").mkdir()
    warned.append("\\x1b[31mred")
    (root / "stray.jsonl").write_text("{}\n")
    warned.append("stray.jsonl")
    return Hostile(root, good, stored, failing, warned)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    return make_hostile(tmp_path_factory.mktemp("hostile"))


def assert_clean(text: str) -> None:
    assert "Traceback" not in text and "internal error" not in text, text[-3000:]
    assert "\x1b" not in text, "a terminal escape from a file name reached the output"


def assert_stored(hostile: Hostile, db: Path, tmp_path: Path, env: dict[str, str]) -> None:
    found = read_records(db)
    assert sorted(found) == sorted([*hostile.good, *hostile.stored])
    # The real sessions ingested alone, from the same files, into a store of their own.
    reference_db = tmp_path / "reference.db"
    targets = [str(path) for path in hostile.root.glob("*/*.jsonl") if path.stem in hostile.good]
    result = run_postrun("ingest", "--agent", "claude-code", *targets, env=dict(env, POSTRUN_DB=str(reference_db)))
    assert result.returncode == 0, result.stderr
    assert differences({key: found[key] for key in hostile.good}, read_records(reference_db)) == []
    assert store_problems(db) == []
    odd = found[_sid(1)]
    assert len(odd.steps) >= 4  # the good lines among the junk
    actors = [json.loads(record)["id"] for _, record in found[_sid(5)].actors]
    assert actors == ["agent-good", "agent-junk", "root"]  # junk lines skipped: an actor without steps


def test_postrun_ingest_over_hostile_claude_files(hostile: Hostile, tmp_path: Path) -> None:
    env = isolated_env(tmp_path) | {"POSTRUN_DB": str(tmp_path / "store" / "postrun.db")}
    result = run_postrun("ingest", "--agent", "claude-code", str(hostile.root), env=env, timeout=TIMEOUT)
    assert result.returncode == 1
    assert_clean(result.stdout + result.stderr)
    ingested = {line.split()[3].rstrip(":") for line in result.stdout.splitlines() if line.startswith("ingested")}
    assert ingested == {*hostile.good, *hostile.stored}, result.stdout
    lines = result.stderr.splitlines()
    for name, reason in hostile.failing.items():
        mine = [line for line in lines if f"/{name}" in line]
        assert len(mine) == 1 and reason in mine[0], (name, mine)
    for name in hostile.warned:
        mine = [line for line in lines if line.startswith("warning: ") and name in line]
        assert len(mine) == 1, (name, lines)
    assert len(lines) == len(hostile.failing) + len(hostile.warned), lines
    assert_stored(hostile, Path(env["POSTRUN_DB"]), tmp_path, env)


def test_capture_once_over_hostile_claude_files(hostile: Hostile, tmp_path: Path) -> None:
    env = isolated_env(tmp_path) | {
        "POSTRUN_DB": str(tmp_path / "store" / "postrun.db"),
        "POSTRUN_AGENTS": "claude-code",
        "POSTRUN_CLAUDE_DIR": str(hostile.root),
    }
    result = run_postrun("capture", "--once", env=env, timeout=TIMEOUT)
    assert result.returncode == 1  # sessions failed for reasons other than a torn file
    assert_clean(result.stdout + result.stderr)
    log = result.stderr.splitlines()
    for name, reason in hostile.failing.items():
        mine = [line for line in log if f"/{name}" in line or f"claude-code {name}: " in line]
        assert len(mine) == 1 and reason in mine[0], (name, mine)
    for name in hostile.warned:
        logged = name.replace("\\x0a", "\\n")
        assert len([line for line in log if " WARNING " in line and logged in line]) == 1, (name, log)
    assert_stored(hostile, Path(env["POSTRUN_DB"]), tmp_path, env)
