"""Suite 4, hostile inputs: whatever sits in Cline's folder, Postrun says one line about it
and stores the sessions next to it normally.

One sessions root holds good sessions and, next to them, every kind of bad input it
must survive: not JSON, wrong types at every level, 60 MB strings, very deep nesting,
invalid UTF-8, lone surrogates, NUL, a FIFO or a device where a file should be, a session
folder that is a file, symlinks that point outside the sessions root, unsafe folder names.
The real `postrun ingest`, `postrun capture --once` and a live `postrun capture` each go
over it (every run bounded by a timeout: a hang fails the test), and:

- every bad session gets exactly one line naming it, never a traceback or an internal error;
- junk next to the sessions gets one warning line each, with unsafe names escaped (no raw
  newline or terminal escape from a folder name reaches the output);
- sessions whose bad content can be stored safely are stored (bad text replaced, never dropped);
- the good sessions hold exactly the records a clean root gives.

The pure mapping's tolerance of any shape is proven by the property test
``tests/unit/cline/test_cache_and_shapes.py::test_any_shape_maps_to_valid_records_or_a_wrong_shape_error``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from postrun.store.db import Database
from postrun.store.query import load_envelope
from tests.conftest import FIXTURES, run_postrun
from tests.reliability.kit import (
    StoredRecords,
    Synthetic,
    differences,
    isolated_env,
    one_shot,
    read_records,
    store_problems,
    synthetic_id,
)
from tests.support import v12check
from tests.support.capture_process import CaptureProcess, read_store

MB = 2**20
TIMEOUT = 90  # seconds for one run over the whole hostile root: a hang fails instead of blocking CI
GOOD_FIXTURES = (("cline/basic_act", "1790000000000_basic"), ("cline-real/b_run_commands", "1795976512762_vrqks"))
FIFO = object()
DIRECTORY = object()
DEVICE = object()  # /dev/zero's own device node where it may be made, else a symlink to /dev/zero


@dataclass(frozen=True)
class Symlink:
    target: Path


@dataclass
class Bad:
    """A session folder with bad content; ``error`` is the reason expected (a regex), None when it is stored."""

    tag: str
    messages: Any  # bytes, FIFO, DIRECTORY or a Symlink
    manifest: Any = None
    error: str | None = None
    check: Callable[[dict[str, Any]], None] | None = None  # on the exported envelope of a stored session
    session_id: str = field(init=False, default="")


def prompt_doc(*messages: Any, **document: Any) -> bytes:
    return orjson.dumps({"version": 1, "agent": "lead", "messages": list(messages), **document})


def user(text: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "u1", "role": "user", "ts": 1790000000000, "content": text, **extra}


def assistant(content: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "a1", "role": "assistant", "ts": 1790000001000, "content": content, **extra}


def nested(depth: int, leaf: str = '"x"') -> str:
    return "[" * depth + leaf + "]" * depth


def texts(envelope: dict[str, Any]) -> list[str]:
    return [step["payload"].get("text", "") for step in envelope["steps"] if step["type"] == "message"]


def expect_text(fragment: str) -> Callable[[dict[str, Any]], None]:
    def check(envelope: dict[str, Any]) -> None:
        assert any(fragment in text for text in texts(envelope)), (fragment, texts(envelope)[:3])

    return check


def expect_long_text(length: int) -> Callable[[dict[str, Any]], None]:
    def check(envelope: dict[str, Any]) -> None:
        assert max(len(text) for text in texts(envelope)) >= length

    return check


def expect_started_at(expected: str) -> Callable[[dict[str, Any]], None]:
    def check(envelope: dict[str, Any]) -> None:
        assert envelope["session"]["started_at"] == expected
        assert "ended_at" not in envelope["session"]

    return check


def odd_numbers() -> bytes:
    """Epoch-ms times a date cannot hold, token counts and costs whose sums overflow, an exit code
    no integer column holds (json, not orjson: integers beyond 64 bits are written as they are)."""
    huge = 2**64 - 1
    metrics = {"inputTokens": huge, "outputTokens": 1e300, "cacheReadTokens": 10**30, "cost": 1e308}
    result = [{"query": "true", "result": "ok\n[Command exited with code " + "9" * 30 + "]", "success": True}]
    run = {"type": "tool_use", "id": "c1", "name": "run_commands", "input": {"commands": ["true"], "n": 10**40}}
    answered = {"type": "tool_result", "tool_use_id": "c1", "name": "run_commands", "content": json.dumps(result)}
    messages = [
        user("go", ts=1e300),
        assistant([run], ts=-(2**63), metrics=metrics),
        {"id": "r1", "role": "user", "ts": huge, "content": [answered]},
        assistant([{"type": "text", "text": "done"}], id="a2", ts=-1, metrics=metrics),
        assistant([{"type": "text", "text": "again"}], id="a3", ts=-1.5, metrics=metrics),
    ]
    return json.dumps({"version": 1, "agent": "lead", "messages": messages}).encode()


WRONG_SHAPE = r"wrong shape: "


def _can_make_devices() -> bool:
    probe = Path(os.environ.get("TMPDIR", "/tmp")) / f"postrun-mknod-probe-{os.getpid()}"
    try:
        os.mknod(probe, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except OSError:
        return False
    probe.unlink()
    return True


MAKE_DEVICES = _can_make_devices()
DEVICE_ERROR = r"not a regular file \(character device\)" if MAKE_DEVICES else r"symlink to outside the sessions folder"
NOT_YET = r"messages file not parseable yet \(mid-write\?\)"


def bad_sessions(outside: Path) -> list[Bad]:
    """Every kind of bad input, one session each (ids are assigned in order)."""
    # Parses (orjson reads 1024 levels) but is too deep to serialize again.
    deep_input = prompt_doc(
        user("go"), assistant([{"type": "tool_use", "id": "c1", "name": "skills", "input": "DEEP"}])
    )
    deep_input = deep_input.replace(b'"DEEP"', nested(900).encode())
    good_manifest = orjson.dumps({"session_id": "x", "source": "cli", "started_at": "2026-09-21T14:00:00.000Z"})
    return [
        # Not JSON, and JSON of the wrong type at every level.
        Bad("notjson", b"this is not JSON at all", error=r"messages.json: not a JSON file"),
        Bad("rawnul", b'{"messages": [{"role": "user", "content": "a\x00b"}]}', error=NOT_YET),
        Bad("topnumber", b"42", error=WRONG_SHAPE),
        Bad("topstring", b'"messages"', error=WRONG_SHAPE),
        Bad("topnull", b"null", error=WRONG_SHAPE),
        Bad("messagesnumber", prompt_doc().replace(b'"messages":[]', b'"messages":5'), error=WRONG_SHAPE),
        Bad("messagesobject", orjson.dumps({"messages": {"0": user("hi")}}), error=WRONG_SHAPE),
        Bad("messageitems", prompt_doc(1, "two", None, [3]), error=WRONG_SHAPE),
        Bad("contentnumber", prompt_doc(user(42)), error=WRONG_SHAPE),
        Bad("blockitems", prompt_doc(user([1, "x", None])), error=WRONG_SHAPE),
        Bad(
            "fieldtypes",
            prompt_doc(
                user([{"type": 5, "text": ["no"]}], ts="yesterday", id=[1], metadata=7),
                assistant(
                    [
                        {"type": "tool_use", "id": {"a": 1}, "name": 9, "input": "no"},
                        {"type": "tool_result", "tool_use_id": None, "content": 3.5, "is_error": "yes"},
                        {"type": "text", "text": None},
                    ],
                    metrics={"inputTokens": "many", "cost": []},
                    modelInfo=5,
                ),
                {"role": 7, "content": "x"},
                origin="vscode",
                agent=None,
            ),
        ),
        Bad("manifestlist", prompt_doc(user("hi")), manifest=b"[1, 2]", error=r"\.json: wrong shape: top level"),
        Bad(
            "manifesttypes",
            prompt_doc(user("hi")),
            manifest=orjson.dumps(
                {
                    "session_id": 5,
                    "source": [],
                    "started_at": 7,
                    "ended_at": "not a date",
                    "status": {},
                    "model": 1,
                    "metadata": "m",
                    "cwd": ["/"],
                    "workspace_root": None,
                    "exit_code": "0",
                }
            ),
        ),
        Bad(
            "tornmanifest",
            prompt_doc(user("hi")),
            manifest=b'{"session_id": "x", "sta',
            error=r"manifest file not parseable yet",
        ),
        # Sizes and depths.
        Bad("huge", prompt_doc(user("h" * (60 * MB))), check=expect_long_text(60 * MB)),
        Bad("deep", nested(200_000).encode(), error=r"nested deeper than \d+ levels"),
        Bad("deepinput", deep_input, error=WRONG_SHAPE),
        Bad("sparse", b"", error=r"larger than 512 MB \(max_file_mb\)"),  # made a sparse 600 MB file below
        # Text that cannot be stored as it is: replaced, never dropped.
        Bad(
            "badutf8",
            b'{"messages": [{"role": "user", "content": "caf\xe9 \xff\xfe ok"}]}',
            check=expect_text("caf\ufffd \ufffd\ufffd ok"),
        ),
        Bad(
            "surrogates",
            rb'{"messages": [{"role": "user", "content": "a\ud800b\udfffc", "\udc00": 1}]}',
            check=expect_text("a\ufffdb\ufffdc"),
        ),
        Bad(
            "nulescaped",
            rb'{"messages": [{"role": "user", "content": "a\u0000b", "k\u0000": "v"}]}',
            check=expect_text("a\x00b"),
        ),
        # Something other than a regular file where a file should be: refused without being opened.
        Bad("fifo", FIFO, error=r"not a regular file \(fifo\)"),
        Bad("fifomanifest", prompt_doc(user("hi")), manifest=FIFO, error=r"not a regular file \(fifo\)"),
        Bad("zero", DEVICE, error=DEVICE_ERROR),
        Bad("zeromanifest", prompt_doc(user("hi")), manifest=DEVICE, error=DEVICE_ERROR),
        Bad("urandomlink", Symlink(Path("/dev/urandom")), error=r"symlink to outside the sessions folder"),
        Bad("directory", DIRECTORY, error=r"not a regular file \(directory\)"),
        # A file that points outside the sessions root (the outside file is a valid session).
        Bad(
            "outsidefile", Symlink(outside / "elsewhere.messages.json"), error=r"symlink to outside the sessions folder"
        ),
        Bad(
            "outsidemanifest",
            prompt_doc(user("hi")),
            manifest=Symlink(outside / "elsewhere.json"),
            error=r"symlink to outside the sessions folder",
        ),
        Bad("goodmanifestonly", prompt_doc(user("fine")), manifest=good_manifest),
        # Times and numbers no date or store integer can hold: that field is ignored, the session stored.
        Bad(
            "oddtimes",
            prompt_doc(user("hi")),
            manifest=json.dumps(
                {
                    "started_at": "0001-01-01T00:30:00+01:00",  # year 0 in UTC
                    "ended_at": "9999-12-31T23:30:00-01:00",  # year 10000 in UTC
                    "metadata": {"checkpoint": {"history": [{"runCount": 1, "createdAt": -(10**20)}]}},
                }
            ).encode(),
            check=expect_started_at("2026-09-21T14:13:20.000Z"),  # the first message's ts
        ),
        Bad(
            "oddnumbers",
            odd_numbers(),
            manifest=json.dumps(
                {"metadata": {"checkpoint": {"history": [{"runCount": 10**30, "createdAt": 1e300}]}}}
            ).encode(),
        ),
    ]


# Entries of the root that are not sessions: one warning each (name as it must be shown).
UNSAFE_NAMES = ["bad name", "evil\nname", "esc\x1b[31mred", "a" * 200, "$(touch pwned)", "semi;colon"]
SESSION_AS_FILE = "1790000950001_afile"
FOLDER_OUTSIDE = "1790000950002_outside"
FIFO_ENTRY = "1790000950003_fifo"


def make_device(path: Path) -> None:
    if MAKE_DEVICES:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # what /dev/zero is
    else:
        path.symlink_to("/dev/zero")


def plant(root: Path, outside: Path, *, huge: bool) -> list[Bad]:
    """Write every bad input into ``root`` (good sessions are already there)."""
    outside.mkdir(parents=True, exist_ok=True)
    valid = (
        FIXTURES / "cline/basic_act/data/sessions/1790000000000_basic/1790000000000_basic.messages.json"
    ).read_bytes()
    (outside / "elsewhere.messages.json").write_bytes(valid)
    (outside / "elsewhere.json").write_text('{"session_id": "elsewhere", "started_at": "2026-09-21T14:00:00Z"}')
    bads = [bad for bad in bad_sessions(outside) if huge or bad.tag != "huge"]
    for number, bad in enumerate(bads):
        bad.session_id = f"{1790000900000 + number}_{bad.tag}"
        folder = root / bad.session_id
        folder.mkdir()
        for name, content in (
            (f"{bad.session_id}.messages.json", bad.messages),
            (f"{bad.session_id}.json", bad.manifest),
        ):
            path = folder / name
            if content is None:
                continue
            if content is FIFO:
                os.mkfifo(path)
            elif content is DIRECTORY:
                path.mkdir()
            elif content is DEVICE:
                make_device(path)
            elif isinstance(content, Symlink):
                path.symlink_to(content.target)
            else:
                path.write_bytes(content)
        if bad.tag == "sparse":
            with (folder / f"{bad.session_id}.messages.json").open("r+b") as handle:
                handle.truncate(600 * MB)
    # Junk next to the sessions: each a valid session in content, by a name that must not be used.
    for name in UNSAFE_NAMES:
        folder = root / name
        folder.mkdir()
        (folder / f"{name}.messages.json").write_bytes(valid)
    os.mkdir(os.path.join(os.fsencode(root), b"bytes\xff\xfename"))  # not even UTF-8
    (root / SESSION_AS_FILE).write_bytes(valid)
    shutil.copytree(FIXTURES / "cline/basic_act/data/sessions/1790000000000_basic", outside / "folder")
    (root / FOLDER_OUTSIDE).symlink_to(outside / "folder")
    os.mkfifo(root / FIFO_ENTRY)
    return bads


def warned_names() -> list[tuple[str, ...]]:
    """The printable parts of each junk entry's name: all of them on one warning line (however
    the control characters between them are escaped)."""
    parts = [tuple(part for part in re.split(r"[\x00-\x1f]", name) if part) for name in UNSAFE_NAMES]
    return [*parts, ("bytes", "name"), (SESSION_AS_FILE,), (FOLDER_OUTSIDE,), (FIFO_ENTRY,)]


def naming(lines: list[str], parts: tuple[str, ...]) -> list[str]:
    return [line for line in lines if all(part in line for part in parts)]


def add_good_sessions(root: Path) -> list[str]:
    ids = []
    for case, session_id in GOOD_FIXTURES:
        shutil.copytree(FIXTURES / case / "data" / "sessions" / session_id, root / session_id)
        ids.append(session_id)
    for index in (1, 2):
        synthetic = Synthetic(synthetic_id(index), seed=index)
        for _ in range(8):
            synthetic.grow()
        synthetic.write(root)
        ids.append(synthetic.session_id)
    return ids


@dataclass
class HostileRoot:
    root: Path
    good: list[str]
    bads: list[Bad]
    reference: dict[str, StoredRecords]  # the good sessions, ingested from a clean root

    @property
    def failing(self) -> list[Bad]:
        return [bad for bad in self.bads if bad.error is not None]

    @property
    def stored(self) -> list[Bad]:
        return [bad for bad in self.bads if bad.error is None]


def make_hostile_root(base: Path, *, huge: bool = True) -> HostileRoot:
    """Good sessions (and their reference records, from the clean root), then every bad input next to them."""
    data = base / "cline"
    root = data / "sessions"
    root.mkdir(parents=True)
    os.mkfifo(data / "globalState.json")  # even Cline's settings file: read as unreadable, never blocks
    good = add_good_sessions(root)
    reference = one_shot(root, base / "reference" / "postrun.db", isolated_env(base))
    assert sorted(reference) == sorted(good)
    bads = plant(root, base / "outside", huge=huge)
    return HostileRoot(root, good, bads, reference)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileRoot:
    return make_hostile_root(tmp_path_factory.mktemp("hostile"))


def assert_clean_output(text: str) -> None:
    assert "Traceback" not in text and "internal error" not in text, text[-3000:]
    assert "\x1b" not in text, "a terminal escape from a folder name reached the output"


def assert_good_and_tolerated_sessions(hostile: HostileRoot, db: Path) -> None:
    found = read_records(db)
    assert differences({k: found[k] for k in hostile.good if k in found}, hostile.reference) == []
    assert sorted(found) == sorted([*hostile.good, *(bad.session_id for bad in hostile.stored)])
    with Database.open(db, create=False) as database:
        for bad in hostile.stored:
            envelope = json.loads(orjson.dumps(load_envelope(database, bad.session_id)))
            assert v12check.problems(envelope) == [], bad.tag
            if bad.check is not None:
                bad.check(envelope)
    assert store_problems(db) == []


def test_postrun_ingest_over_hostile_inputs(hostile: HostileRoot, tmp_path: Path) -> None:
    env = isolated_env(tmp_path) | {"POSTRUN_DB": str(tmp_path / "store" / "postrun.db")}
    result = run_postrun("ingest", "--agent", "cline", str(hostile.root), env=env, timeout=TIMEOUT)
    assert result.returncode == 1
    assert_clean_output(result.stdout + result.stderr)
    stored = {line.split()[3].rstrip(":") for line in result.stdout.splitlines()}
    assert stored == {*hostile.good, *(bad.session_id for bad in hostile.stored)}, result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(errors) + len(warnings) == len(result.stderr.splitlines()), result.stderr
    for bad in hostile.failing:
        mine = [line for line in errors if f"/{bad.session_id}/" in line]
        assert len(mine) == 1, (bad.tag, mine)
        assert re.search(bad.error or "", mine[0]), (bad.tag, mine[0])
    assert len(errors) == len(hostile.failing)
    for parts in warned_names():
        assert len(naming(warnings, parts)) == 1, (parts, warnings)
    assert len(warnings) == len(warned_names())
    assert_good_and_tolerated_sessions(hostile, Path(env["POSTRUN_DB"]))
    huge = next(bad for bad in hostile.stored if bad.tag == "huge")
    exported = run_postrun("export", huge.session_id, "--format", "jsonl", env=env, timeout=TIMEOUT)
    assert exported.returncode == 0 and len(exported.stdout) > 60 * MB, exported.stderr


def test_capture_once_over_hostile_inputs(hostile: HostileRoot, tmp_path: Path) -> None:
    env = isolated_env(tmp_path) | {
        "POSTRUN_DB": str(tmp_path / "store" / "postrun.db"),
        "POSTRUN_CLINE_DIR": str(hostile.root),
    }
    result = run_postrun("capture", "--once", env=env, timeout=TIMEOUT)
    assert result.returncode == 1  # sessions failed for reasons other than a torn file
    assert_clean_output(result.stdout + result.stderr)
    torn = [bad for bad in hostile.failing if "not parseable yet" in (bad.error or "")]
    sessions = len(hostile.good) + len(hostile.bads)
    summary = result.stdout.strip().splitlines()[-1]
    assert summary.startswith(
        f"summary: {sessions} sessions, {sessions - len(hostile.failing)} ingested, 0 updated, 0 unchanged,"
        f" {len(torn)} torn, {len(hostile.failing) - len(torn)} failed in "
    ), summary
    log = result.stderr.splitlines()
    for bad in hostile.failing:
        mine = [line for line in log if f"cline {bad.session_id}: " in line]
        assert len(mine) == 1 and re.search(bad.error or "", mine[0]), (bad.tag, mine)
    for parts in warned_names():
        assert len(naming([line for line in log if " WARNING " in line], parts)) == 1, (parts, log)
    assert_good_and_tolerated_sessions(hostile, Path(env["POSTRUN_DB"]))


def test_live_capture_over_hostile_inputs(tmp_path: Path) -> None:
    """Live capture: the same root at start, then new bad entries while it runs, then a good one."""
    hostile = make_hostile_root(tmp_path, huge=False)  # the 60 MB session goes through --once above
    root = hostile.root
    env = isolated_env(tmp_path) | {
        "POSTRUN_DB": str(tmp_path / "store" / "postrun.db"),
        "POSTRUN_CLINE_DIR": str(root),
        "POSTRUN_DEBOUNCE_SECONDS": "0.1",
        "POSTRUN_POLL_SECONDS": "0.3",
    }
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(r"cline: caught up with \d+ sessions", timeout=TIMEOUT)
        for bad in hostile.failing:
            assert len(capture.lines(rf"cline {bad.session_id}: ")) == 1, bad.tag
        # While it runs: a FIFO and a device appear as session files, then a good session.
        late_fifo = root / "1790000960001_latefifo"
        late_fifo.mkdir()
        os.mkfifo(late_fifo / f"{late_fifo.name}.messages.json")
        late_zero = root / "1790000960002_latezero"
        late_zero.mkdir()
        make_device(late_zero / f"{late_zero.name}.messages.json")
        late = Synthetic(synthetic_id(9), seed=9)
        late.grow()
        late.write(root)
        capture.wait_until(lambda: late.session_id in read_store(Path(env["POSTRUN_DB"])), what="the late good session")
        capture.wait_for_log(rf"ERROR cline {late_fifo.name}: .*not a regular file \(fifo\)")
        capture.wait_for_log(rf"ERROR cline {late_zero.name}: .*({DEVICE_ERROR})")
        code, seconds = capture.stop(signal.SIGTERM)
        assert code == 0 and seconds < 5
    finally:
        capture.kill()
    assert_clean_output(capture.log())
    for bad in hostile.failing:
        assert len(capture.lines(rf"cline {bad.session_id}: ")) == 1, bad.tag  # once, not on every poll
    found = read_records(Path(env["POSTRUN_DB"]))
    assert differences({k: found[k] for k in hostile.good if k in found}, hostile.reference) == []
    assert {bad.session_id for bad in hostile.stored} <= found.keys()
    assert store_problems(Path(env["POSTRUN_DB"])) == []


@pytest.fixture
def small_limit_env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path) | {"POSTRUN_DB": str(tmp_path / "store" / "postrun.db"), "POSTRUN_MAX_FILE_MB": "1"}


def test_a_file_over_max_file_mb_is_refused_and_its_neighbours_stored(
    small_limit_env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "cline" / "sessions"
    big = Synthetic(synthetic_id(1), seed=1)
    while len(orjson.dumps(big.document(), option=orjson.OPT_INDENT_2)) <= 2 * MB:
        for _ in range(50):
            big.grow()
    big.write(root)
    small = Synthetic(synthetic_id(2), seed=2)
    small.grow()
    small.write(root)
    result = run_postrun("ingest", str(root), env=small_limit_env, timeout=TIMEOUT)
    assert result.returncode == 1
    assert (
        result.stderr
        == f"error: {root / big.session_id / big.session_id}.messages.json: larger than 1 MB (max_file_mb)\n"
    )
    assert list(read_store(Path(small_limit_env["POSTRUN_DB"]))) == [small.session_id]


# -- hostile helper transcripts next to a good session -------------------------------------

HOSTILE_HELPERS: dict[str, tuple[Any, str]] = {
    # name -> (content, the reason its one line gives)
    "agent_notjson": (b"this is not JSON", r"not a JSON file"),
    "agent_shape": (b'{"messages": 5}', r"wrong shape: messages: expected a list"),
    "agent_blocks": (orjson.dumps({"messages": [{"role": "user", "content": [1]}]}), WRONG_SHAPE),
    "agent_deep": (nested(200_000).encode(), r"nested deeper than \d+ levels"),
    "agent_fifo": (FIFO, r"not a regular file \(fifo\)"),
    "agent_zero": (DEVICE, DEVICE_ERROR),
    "agent_outside": (Symlink(Path("/dev/urandom")), r"symlink to outside the sessions folder"),
    "mate__torn": (b'{"agent": "teammate", "messages": [{"id": "m', NOT_YET),
}


def plant_hostile_helpers(root: Path) -> Synthetic:
    session = Synthetic(synthetic_id(3), seed=3, with_helper=True)
    for _ in range(6):
        session.grow()
    session.write(root)
    folder = root / session.session_id
    for name, (content, _) in HOSTILE_HELPERS.items():
        path = folder / f"{name}.messages.json"
        if content is FIFO:
            os.mkfifo(path)
        elif content is DEVICE:
            make_device(path)
        elif isinstance(content, Symlink):
            path.symlink_to(content.target)
        else:
            path.write_bytes(content)
    (folder / "dir.messages.json").mkdir()  # a folder is no transcript: not even looked at
    return session


def test_hostile_helper_files_get_one_line_each_and_the_session_is_stored(tmp_path: Path) -> None:
    root = tmp_path / "cline" / "sessions"
    session = plant_hostile_helpers(root)
    env = isolated_env(tmp_path) | {"POSTRUN_DB": str(tmp_path / "store" / "postrun.db")}
    result = run_postrun("ingest", str(root), env=env, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert_clean_output(result.stdout + result.stderr)
    assert result.stdout.startswith(f"ingested cline session {session.session_id}: ")
    lines = result.stderr.splitlines()
    assert len(lines) == len(HOSTILE_HELPERS), lines
    for name, (_, reason) in HOSTILE_HELPERS.items():
        mine = [line for line in lines if f"/{name}.messages.json: " in line]
        assert len(mine) == 1 and mine[0].startswith("warning: ") and re.search(reason, mine[0]), (name, mine)
    envelope = json.loads(run_postrun("export", session.session_id, env=env, timeout=TIMEOUT).stdout)
    assert [actor["id"] for actor in envelope["actors"]] == ["root", session.helper_id]
    assert v12check.problems(envelope) == []
    once = run_postrun(
        "capture",
        "--once",
        env=env | {"POSTRUN_CLINE_DIR": str(root), "POSTRUN_DB": str(tmp_path / "o.db")},
        timeout=TIMEOUT,
    )
    assert once.returncode == 0, once.stderr
    assert_clean_output(once.stdout + once.stderr)
    for name, (_, reason) in HOSTILE_HELPERS.items():
        mine = [line for line in once.stderr.splitlines() if f"/{name}.messages.json: " in line]
        assert len(mine) == 1 and re.search(reason, mine[0]), (name, mine)
    assert differences(read_records(tmp_path / "o.db"), read_records(Path(env["POSTRUN_DB"]))) == []
