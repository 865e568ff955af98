"""Suite 6, security: a private store, nothing written under Cline's folders, no network,
and no path taken from session data ever opened.

CI runs as root, so file permissions prove nothing about what Postrun *tries* to do. The
proof is an audit hook (``sys.addaudithook``) that a ``sitecustomize`` loads into every real
``postrun`` process the suite starts: it records every file opened (with its flags), every
folder listed, every path created, renamed, removed, chmod-ed or touched, every socket
created and every name lookup, and every process started. Then, for ``ingest``,
``capture --once``, a live ``capture`` (with sd_notify and changes while it runs),
``export`` (json, jsonl, markdown, to a file), ``sessions``, ``show`` and ``search``:

- nothing under Cline's data folder is opened for writing, created, renamed, removed or
  changed in any way;
- no AF_INET/AF_INET6 socket and no name lookup (the AF_UNIX sd_notify socket is allowed);
- no process is started;
- no path named inside a session (the manifest's ``messages_path``, ``cwd``, an editor
  path, a ``read_files`` path, a proceed-while-running ``output_ref``, a patch's file, a
  ``file`` block) is ever opened, listed or changed: every one of them is planted as a
  real file, and the records do carry them;
- everything Postrun opens at all is Python's own files, its configuration, its store,
  or Cline's files (read only).

And under a permissive umask (000) the store's folders are 0700 and its files 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import FIXTURES, REPO, postrun_command
from tests.reliability.kit import Synthetic, install_sitecustomize, isolated_env, read_records, synthetic_id
from tests.support.capture_process import CaptureProcess

AUDIT_SITE = r"""
import json
import os
import sys

_log = os.environ.get("TEST_AUDIT_LOG")
if _log:
    _fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    _WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    # event -> positions of the paths it changes
    _CHANGES = {
        "os.mkdir": (0,), "os.rename": (0, 1), "os.remove": (0,), "os.rmdir": (0,), "os.chmod": (0,),
        "os.chown": (0,), "os.truncate": (0,), "os.utime": (0,), "os.symlink": (1,), "os.link": (0, 1),
        "os.setxattr": (0,), "os.removexattr": (0,), "os.chflags": (0,), "os.mkfifo": (0,), "os.mknod": (0,),
        "shutil.rmtree": (0,), "shutil.copyfile": (1,), "shutil.move": (0, 1),
    }
    _NETWORK = {
        "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
        "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo",
    }
    _PROCESSES = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty"}

    def _path(value):
        if isinstance(value, int):
            try:
                return os.readlink(f"/proc/self/fd/{value}")
            except OSError:
                return f"<fd {value}>"
        try:
            return os.path.abspath(os.fsdecode(value))
        except Exception:
            return repr(value)

    def _record(entry):
        os.write(_fd, (json.dumps(entry | {"pid": os.getpid()}) + "\n").encode())

    def _hook(event, args):
        if event == "open":
            path, mode, flags = args
            if path is None:
                return
            write = bool((flags or 0) & _WRITE) or (isinstance(mode, str) and any(c in mode for c in "wax+"))
            _record({"event": event, "paths": [_path(path)], "write": write})
        elif event in _CHANGES:
            _record({"event": event, "paths": [_path(args[i]) for i in _CHANGES[event]], "write": True})
        elif event in ("os.listdir", "os.scandir"):
            _record({"event": event, "paths": [_path(args[0] if args and args[0] is not None else ".")]})
        elif event == "socket.__new__":
            _record({"event": event, "family": int(args[1])})
        elif event in _NETWORK and args and hasattr(args[0], "family"):
            _record({"event": event, "family": int(args[0].family), "args": repr(args[1:])[:300]})
        elif event in _NETWORK or event in _PROCESSES:
            _record({"event": event, "args": repr(args)[:300]})

    sys.addaudithook(_hook)
"""


@dataclass
class Audit:
    """What one postrun process did, as its audit hook recorded it."""

    command: str
    entries: list[dict[str, Any]] = field(default_factory=list)

    def paths(self, *, write: bool | None = None) -> list[tuple[str, str]]:
        found = []
        for entry in self.entries:
            if "paths" in entry and (write is None or entry.get("write", False) == write):
                found.extend((entry["event"], path) for path in entry["paths"])
        return found

    def events(self, *names: str) -> list[dict[str, Any]]:
        return [entry for entry in self.entries if entry["event"] in names]


@dataclass
class World:
    """The machine the suite's postrun processes run on (everything under one tmp folder)."""

    base: Path
    env: dict[str, str]
    cline: Path  # Cline's data folder (globalState.json, settings/, sessions/)
    bait: Path  # files named inside session data
    audits: dict[str, Audit] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)  # what the store's files looked like, by name
    bait_id: str = ""

    @property
    def root(self) -> Path:
        return self.cline / "sessions"

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])

    @property
    def data_dir(self) -> Path:
        return Path(self.env["XDG_DATA_HOME"]) / "postrun"

    @property
    def db(self) -> Path:
        return self.data_dir / "postrun.db"

    def audit_env(self, name: str) -> dict[str, str]:
        return self.env | {"TEST_AUDIT_LOG": str(self.base / "audit" / f"{name}.jsonl")}

    def collect(self, name: str) -> Audit:
        log = self.base / "audit" / f"{name}.jsonl"
        audit = Audit(name, [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else [])
        self.audits[name] = audit
        return audit

    def run(
        self, name: str, *args: str, timeout: float = 120, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        with permissive_umask():
            result = subprocess.run(
                [*postrun_command(), *args],
                env=self.audit_env(name) | (env or {}),
                capture_output=True,
                text=True,
                timeout=timeout,
                errors="replace",
            )
        self.collect(name)
        assert "Traceback" not in result.stderr, result.stderr
        return result


@contextlib.contextmanager
def permissive_umask() -> Iterator[None]:
    """Processes started inside run with umask 000 (inherited)."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def bait_session(root: Path, bait: Path) -> str:
    """A session whose data names real files outside (and inside) the sessions root."""
    session_id = "1790000700000_baits"
    for name in ("moved.messages.json", "edit.py", "read.txt", "file.txt", "patched.py", "out.log"):
        (bait / name).write_text("bait: never to be opened\n")
    (bait / "cwd").mkdir()
    (bait / "moved.messages.json").write_text('{"messages": []}')
    inside = root / "1790000000000_basic" / "1790000000000_basic.messages.json"  # a real file inside the root
    calls = [
        ("editor", {"command": "create", "path": str(bait / "edit.py"), "file_text": "x = 1\n"}, '{"result": "ok"}'),
        ("read_files", {"files": [{"path": str(bait / "read.txt")}, {"path": str(inside)}]}, None),
        (
            "run_commands",
            {"commands": ["sleep 100"]},
            [
                {
                    "query": "sleep 100",
                    "result": f"[Command is still running. Output will continue in {bait / 'out.log'}]\nhi",
                    "success": True,
                }
            ],
        ),
        (
            "apply_patch",
            {"input": f"*** Begin Patch\n*** Update File: {bait / 'patched.py'}\n@@\n-a\n+b\n*** End Patch"},
            "ok",
        ),
    ]
    messages: list[dict[str, Any]] = [
        {
            "id": "u1",
            "role": "user",
            "ts": 1790000700000,
            "content": [{"type": "text", "text": '<user_input mode="act">go</user_input>'}],
        },
        {
            "id": "u2",
            "role": "user",
            "ts": 1790000700001,
            "content": [{"type": "file", "path": str(bait / "file.txt"), "content": "x"}],
        },
    ]
    for number, (name, tool_input, result) in enumerate(calls):
        if result is None:
            result = [{"query": item["path"], "result": "1 | x", "success": True} for item in tool_input["files"]]
        call_id = f"toolu_bait_{number}"
        messages.append(
            {
                "id": f"a{number}",
                "role": "assistant",
                "ts": 1790000701000 + number,
                "content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}],
            }
        )
        messages.append(
            {
                "id": f"r{number}",
                "role": "user",
                "ts": 1790000702000 + number,
                "content": [{"type": "tool_result", "tool_use_id": call_id, "name": name, "content": result}],
            }
        )
    folder = root / session_id
    folder.mkdir()
    (folder / f"{session_id}.messages.json").write_bytes(
        orjson.dumps({"version": 1, "agent": "lead", "messages": messages})
    )
    manifest = {
        "session_id": session_id,
        "source": "cli",
        "started_at": "2026-09-21T14:00:00.000Z",
        "status": "running",
        "cwd": str(bait / "cwd"),
        "workspace_root": str(bait / "cwd"),
        "messages_path": str(bait / "moved.messages.json"),
        "metadata": {"title": "bait", "checkpoint": {"latest": str(bait / "edit.py")}},
    }
    (folder / f"{session_id}.json").write_bytes(orjson.dumps(manifest))
    return session_id


def make_world(base: Path) -> World:
    (base / "audit").mkdir()
    cline = base / "cline"
    # XDG folders not created yet: Postrun makes the folders it needs (they must come out private).
    environ = isolated_env(base) | {
        "POSTRUN_CLINE_DIR": str(cline / "sessions"),
        "POSTRUN_DEBOUNCE_SECONDS": "0.1",
        "POSTRUN_POLL_SECONDS": "0.3",
    }
    install_sitecustomize(base / "site", AUDIT_SITE, environ)
    world = World(base, environ, cline, base / "bait")
    world.bait.mkdir()
    shutil.copytree(FIXTURES / "cline/basic_act/data", cline)  # globalState.json + a VS Code session
    shutil.copytree(FIXTURES / "cline-real/b_run_commands/data/sessions", world.root, dirs_exist_ok=True)
    settings = FIXTURES / "cline-real/b_run_commands/data/settings"
    if settings.is_dir():
        shutil.copytree(settings, cline / "settings")
    world.bait_id = bait_session(world.root, world.bait)
    # A messages file planted as a symlink out of the root: refused, never opened.
    planted = world.root / "1790000700001_plant"
    planted.mkdir()
    (planted / f"{planted.name}.messages.json").symlink_to(world.bait / "moved.messages.json")
    return world


def record_modes(world: World, when: str) -> None:
    for path in (world.home / ".local", world.home / ".local" / "share", world.data_dir, *world.data_dir.iterdir()):
        world.modes[f"{when}:{path.relative_to(world.home)}"] = stat.S_IMODE(path.lstat().st_mode)


def live_capture(world: World) -> None:
    """A live capture with sd_notify: a session changes, a new one appears, then SIGTERM."""
    name = f"postrun-security-notify-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as manager:
        manager.bind("\0" + name)
        with permissive_umask():
            capture = CaptureProcess(world.audit_env("capture-live") | {"NOTIFY_SOCKET": "@" + name}, world.base)
        try:
            manager.settimeout(30)
            while b"READY=1" not in manager.recv(4096):
                pass
            capture.wait_for_log(r"cline: watching ")
            record_modes(world, "capture")  # -wal and -shm exist while capture holds the store
            changed = Synthetic(synthetic_id(3), seed=3)
            changed.grow()
            changed.write(world.root)
            basic = world.root / "1790000000000_basic" / "1790000000000_basic.messages.json"
            basic.write_bytes(basic.read_bytes().replace(b"Fixing the off-by-one.", b"Fixing the off-by-one (live)."))
            capture.wait_until(lambda: changed.session_id in read_records(world.db), what="the new session")
            capture.wait_for_log(r"INFO cline updated 1790000000000_basic ")
            code, _ = capture.stop(signal.SIGTERM)
            assert code == 0, capture.log()
        finally:
            capture.kill()
    world.collect("capture-live")
    assert "Traceback" not in capture.log()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """Every command run once, under the audit hook and umask 000."""
    world = make_world(tmp_path_factory.mktemp("security"))
    # In mapping processes (Postrun's own, audited too: they inherit the hook), as a large history is.
    ingest = world.run("ingest", "ingest", "--agent", "cline", str(world.root), env={"POSTRUN_INGEST_PROCESSES": "2"})
    assert ingest.returncode == 1  # the planted symlink is refused; everything else stored
    assert "symlink to outside the sessions folder" in ingest.stderr
    record_modes(world, "ingest")
    Synthetic(synthetic_id(2), seed=2).write(world.root)  # something new for --once
    once = world.run("capture-once", "capture", "--once", env={"POSTRUN_INGEST_PROCESSES": "2"})  # mapped apart too
    assert once.returncode == 1, once.stderr  # the planted symlink again
    live_capture(world)
    out = world.base / "exports"
    out.mkdir()
    for export_format in ("json", "jsonl", "markdown"):
        exported = world.run(f"export-{export_format}", "export", world.bait_id, "--format", export_format)
        assert exported.returncode == 0, exported.stderr
    to_file = world.run("export-file", "export", world.bait_id, "--format", "markdown", "-o", str(out / "bait.md"))
    assert to_file.returncode == 0, to_file.stderr
    world.modes["export:bait.md"] = stat.S_IMODE((out / "bait.md").stat().st_mode)
    for name, args in (
        ("sessions", ("sessions", "--json")),
        ("show", ("show", world.bait_id)),
        ("search", ("search", "bait")),
    ):
        assert world.run(name, *args).returncode == 0
    (world.base / "export.json").write_text(world.run("export-check", "export", world.bait_id).stdout)
    return world


MAPPING_PROCESS = f"[{str(sys.executable)!r}, '-P', '-m', 'postrun.ingest.pool_process', "

COMMANDS = [
    "ingest",
    "capture-once",
    "capture-live",
    "export-json",
    "export-jsonl",
    "export-markdown",
    "export-file",
    "sessions",
    "show",
    "search",
]


def test_the_audit_hook_sees_everything_it_must_forbid(tmp_path: Path) -> None:
    """The proof only counts if the hook catches each forbidden thing: do each once, in the same setup."""
    world = make_world(tmp_path)
    target = world.cline / "probe"
    script = f"""
import os, socket, subprocess
open({str(target)!r}, "w").close()
fd = os.open({str(target)!r}, os.O_RDWR); os.close(fd)
os.mkdir({str(target)!r} + ".d")
os.rename({str(target)!r}, {str(target)!r} + ".2")
os.chmod({str(target)!r} + ".2", 0o600)
os.utime({str(target)!r} + ".2")
os.remove({str(target)!r} + ".2")
open({str(world.bait / "read.txt")!r}).read()
socket.socket(socket.AF_INET).close()
socket.socket(socket.AF_INET6).close()
try:
    socket.getaddrinfo("localhost", 80)
except OSError:
    pass
subprocess.run(["true"])
"""
    subprocess.run([sys.executable, "-c", script], env=world.audit_env("canary"), check=True, timeout=60)
    canary = world.collect("canary")
    written = {event for event, path in canary.paths(write=True) if path.startswith(str(world.cline))}
    assert written >= {"open", "os.mkdir", "os.rename", "os.chmod", "os.utime", "os.remove"}
    assert any(path == str(world.bait / "read.txt") for _, path in canary.paths())
    assert {entry["family"] for entry in canary.events("socket.__new__")} >= {socket.AF_INET, socket.AF_INET6}
    assert canary.events("socket.getaddrinfo") and canary.events("subprocess.Popen")


@pytest.mark.parametrize("command", COMMANDS)
def test_nothing_is_written_under_clines_folder(world: World, command: str) -> None:
    audit = world.audits[command]
    assert audit.entries, "the hook recorded nothing: it was not loaded"
    if command.startswith(("ingest", "capture")):
        read = [path for event, path in audit.paths(write=False) if event == "open"]
        assert any(Path(path).is_relative_to(world.root) for path in read)  # the hook saw it read Cline's files
    changed = [(event, path) for event, path in audit.paths(write=True) if Path(path).is_relative_to(world.cline)]
    assert changed == []


@pytest.mark.parametrize("command", COMMANDS)
def test_no_network_and_no_process(world: World, command: str) -> None:
    audit = world.audits[command]
    families = {entry["family"] for entry in audit.events("socket.__new__")}
    assert families <= {socket.AF_UNIX}
    network = audit.events(
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
    )
    assert [entry for entry in network if entry.get("family") != socket.AF_UNIX] == []
    started = audit.events("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork")
    if command in ("ingest", "capture-once"):
        # The one kind of process Postrun starts: its own mapping processes, the same Python.
        assert len(started) == 2, started
        assert all(entry["event"] == "subprocess.Popen" and MAPPING_PROCESS in entry["args"] for entry in started)
        assert len({entry["pid"] for entry in audit.entries}) == 3  # their own hooks recorded them too
    else:
        assert started == []
    if command == "capture-live":
        assert families == {socket.AF_UNIX}  # sd_notify: the one socket allowed (and seen by the hook)


@pytest.mark.parametrize("command", COMMANDS)
def test_no_path_from_session_data_is_ever_opened(world: World, command: str) -> None:
    # Resolved too: a session file planted as a symlink to the bait must not be read through.
    touched = [
        (event, path)
        for event, path in world.audits[command].paths()
        if Path(path).is_relative_to(world.bait) or Path(path).resolve().is_relative_to(world.bait)
    ]
    assert touched == []


def test_the_session_data_does_name_the_bait(world: World) -> None:
    """The bait was really in the records: not opening it was a choice, not an accident."""
    exported = (world.base / "export.json").read_text()
    for name in ("edit.py", "read.txt", "out.log", "patched.py", "file.txt"):
        assert str(world.bait / name) in exported, name
    raw = (world.root / world.bait_id / f"{world.bait_id}.json").read_text()
    assert str(world.bait / "moved.messages.json") in raw


@pytest.mark.parametrize("command", COMMANDS)
def test_everything_opened_is_python_config_store_or_cline_read_only(world: World, command: str) -> None:
    allowed = [
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.executable).resolve().parent.parent,
        REPO / "postrun",  # an editable install (CI installs into the venv)
        world.base / "site",
        world.home,  # configuration, the store, the capture lock and log (all under XDG folders)
        world.cline,  # read only: see test_nothing_is_written_under_clines_folder
        world.base / "exports",
        Path("/dev/null"),
        Path("/etc/localtime"),
        Path("/usr/share/zoneinfo"),
    ]
    unexpected = [
        (event, path)
        for event, path in world.audits[command].paths()
        if not any(Path(path).is_relative_to(folder) for folder in allowed)
        and not Path(path).name.startswith("__editable__.postrun-")  # the import hook of an editable install
    ]
    assert unexpected == [], unexpected


def test_the_store_is_private_under_a_permissive_umask(world: World) -> None:
    """umask 000: Postrun's folders still 0700, its files 0600 (after ingest, and while capture
    holds the store with its -wal and -shm); an export to a file is private too."""
    seen = {key.split(":", 1)[1] for key in world.modes}
    assert {".local", ".local/share", ".local/share/postrun", ".local/share/postrun/postrun.db"} <= seen
    assert any(key.endswith("postrun.db-wal") for key in world.modes) and any(
        key.endswith("-shm") for key in world.modes
    )
    assert any(key.endswith(".capture.lock") for key in world.modes)
    wrong = {}
    for key, mode in world.modes.items():
        path = key.split(":", 1)[1]
        expected = 0o700 if path in (".local", ".local/share", ".local/share/postrun") else 0o600
        if mode != expected:
            wrong[key] = oct(mode)
    assert wrong == {}
