"""The mirror's promises hold for every agent's sessions, not only Cline's: no secret a
redacted export hides reaches any table of the team server, and what the mirror holds is
the redacted store exactly (so ``mirror status`` is caught up, and a mirror that lost a
session gets it back). Real ``postrun`` processes, a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from postrun.agents import registry
from tests.conftest import run_postrun
from tests.mirror.conftest import Mirror
from tests.mirror.test_mirror_privacy import ok, secrets_in_export
from tests.reliability.kit import Synthetic, synthetic_id
from tests.support import mirror_check
from tests.support.claude_cases import BASH_OK
from tests.support.claude_lines import Transcript
from tests.support.codex_rollouts import RolloutWriter
from tests.support.secret_samples import SAMPLES

AWS, AWS_LINE = SAMPLES["aws_key"]
GITHUB, GITHUB_LINE = SAMPLES["github_token"]
STRIPE, STRIPE_LINE = SAMPLES["stripe_key"]
CWD = "/home/dev/work/app"

# An agent's root (what ``ingest --agent KIND ROOT`` is given), written with a session whose
# prompt holds a GitHub token, whose command's output holds an AWS key and which read (or was
# told) a Stripe key; ``more`` appends a turn (the second push then sends changed rows, the
# earlier ones go to history).
Writer = Callable[[Path, bool], str]


def cline(root: Path, more: bool) -> str:
    session = Synthetic(synthetic_id(11), seed=11)
    for _ in range(8 if more else 6):
        session.grow()
    session.messages[0]["content"][0]["text"] = f'<user_input mode="act">deploy with {GITHUB_LINE}</user_input>'
    results = [m for m in session.messages if m["content"][0].get("name") == "run_commands"]
    results[0]["content"][0]["content"][0]["result"] = f"$ cat ~/.aws/credentials\n{AWS_LINE}\n"
    reply = next(m for m in session.messages if m["role"] == "assistant")
    reply["content"][0]["text"] = f"found {STRIPE_LINE} in the config"
    session.write(root)
    return session.session_id


def claude_code(root: Path, more: bool) -> str:
    t = Transcript("c0ffee00-0000-4000-8000-000000000911", CWD)
    t.enqueue(f"deploy with {GITHUB_LINE}")
    t.prompt(f"deploy with {GITHUB_LINE}")
    t.metadata(prompt="deploy")
    t.call("msg_1", "toolu_cat", "Bash", {"command": "cat ~/.aws/credentials", "description": "Read"})
    output = f"[default]\n{AWS_LINE}\n"
    t.result("toolu_cat", output, is_error=False, tool_use_result={"stdout": output, **BASH_OK})
    t.call("msg_2", "toolu_env", "Read", {"file_path": f"{CWD}/.env"})
    read = {"filePath": f"{CWD}/.env", "content": STRIPE_LINE, "numLines": 1, "startLine": 1, "totalLines": 1}
    t.result("toolu_env", f"1\t{STRIPE_LINE}\n", tool_use_result={"type": "text", "file": read})
    t.text("msg_3", "Found the credentials.")
    if more:
        t.prompt("now deploy")
        t.text("msg_4", "Deployed.")
    t.write(root / "-home-dev-work-app" / f"{t.session_id}.jsonl")
    return t.session_id


def codex(root: Path, more: bool) -> str:
    rollout = RolloutWriter("019b0000-0000-7000-8000-000000000911", cwd=CWD)
    rollout.begin("t1")
    rollout.user("u1", f"deploy with {GITHUB_LINE}", "t1")
    rollout.command("c1", "cat ~/.aws/credentials", "t1", output=f"[default]\n{AWS_LINE}\n")
    rollout.agent("m1", f"Found the credentials and {STRIPE_LINE}.", "t1")
    rollout.task_complete("t1")
    if more:
        rollout.begin("t2", first=False)
        rollout.user("u2", "now deploy", "t2")
        rollout.agent("m2", "Deployed.", "t2")
        rollout.task_complete("t2")
    rollout.write(root)
    return rollout.thread_id


WRITERS: dict[str, Writer] = {"cline": cline, "claude-code": claude_code, "codex": codex}


def test_every_registered_agent_has_a_session_here() -> None:
    assert set(registry.KINDS) <= set(WRITERS)  # a new agent gets its case in this file


def every_table_as_text(mirror: Mirror) -> str:
    """Every row of every table in the mirror's schema, as PostgreSQL prints it."""
    with mirror.server.admin(mirror.database) as admin:
        tables = [
            row[0]
            for row in admin.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'postrun'"
            ).fetchall()
        ]
        assert {"sessions", "segments", "actors", "turns", "steps", "history"} <= set(tables)
        return "\n".join(
            str(row[0]) for table in tables for row in admin.execute(f"SELECT t::text FROM postrun.{table} t")
        )


@pytest.mark.parametrize("kind", registry.KINDS)
def test_no_secret_of_any_agent_s_session_reaches_the_mirror_and_it_reconciles(
    kind: str, tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    root = tmp_path / kind
    env = mirror_env
    write = WRITERS[kind]
    session_id = write(root, False)
    ok("ingest", "--agent", kind, str(root), env=env)
    hidden = [*secrets_in_export(env, session_id), STRIPE]  # a read's text is not in the export
    assert {AWS, GITHUB} <= set(hidden)  # the store holds them: what the mirror must not
    ok("mirror", "push", env=env)
    assert write(root, True) == session_id
    ok("ingest", "--agent", kind, str(root), env=env)
    ok("mirror", "push", env=env)
    held = every_table_as_text(mirror)
    assert session_id in held
    assert [secret for secret in hidden if secret in held] == []
    db = Path(env["POSTRUN_DB"])
    with mirror.server.admin(mirror.database) as admin:
        assert admin.execute("SELECT agent FROM postrun.sessions").fetchall() == [(kind,)]
        output = admin.execute(
            "SELECT payload::text FROM postrun.steps WHERE type = 'command' AND payload::text LIKE '%aws_access%'"
        ).fetchone()
        assert output is not None and "[REDACTED:" in output[0], output  # the output is there, masked
        assert admin.execute("SELECT count(*) FROM postrun.history").fetchone() != (0,)
        if kind == "claude-code":  # the read is flagged with its match masked (the text it read is not kept)
            flags = admin.execute("SELECT record ->> 'flags' FROM postrun.steps WHERE step_id = 'toolu_env'").fetchone()
            assert flags is not None and "in the text read: sk_live_…(32 chars)" in flags[0], flags
        assert mirror_check.differences(db, admin) == []  # the redacted store, exactly
    status = run_postrun("mirror", "status", env=env)
    assert status.returncode == 0, status.stdout
    # The mirror loses the session behind Postrun's back: it is told, then sent again.
    with mirror.server.admin(mirror.database) as admin:
        admin.execute("DELETE FROM postrun.sessions WHERE session_id = %s", (session_id,))
    behind = run_postrun("mirror", "status", env=env)
    assert behind.returncode == 1, behind.stdout
    ok("mirror", "push", env=env)
    with mirror.server.admin(mirror.database) as admin:
        assert mirror_check.differences(db, admin) == []
    assert [secret for secret in hidden if secret in every_table_as_text(mirror)] == []
