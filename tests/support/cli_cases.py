"""A fixture case through the real CLI: `postrun ingest --agent KIND ROOT`, every session exported,
and the case's expect.json checked by the shared fact checker (its report, "" when all hold)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from tests.conftest import run_postrun
from tests.support import expect_facts, v12check


def facts_through_cli(case: Path, root: Path, agent: str, env: dict[str, str], out: Path) -> str:
    ingest = run_postrun("ingest", "--agent", agent, str(root), env=env)
    log = f"$ ingest rc={ingest.returncode}\n{ingest.stdout}\n{ingest.stderr}\n"
    assert "Traceback" not in ingest.stderr
    expected = json.loads((case / "expect.json").read_text())
    out.mkdir(parents=True)
    for session_id in [*expected.get("sessions", {}), *expected.get("absent", [])]:
        exported = run_postrun("export", session_id, "--format", "json", env=env)
        assert "Traceback" not in exported.stderr
        if exported.returncode == 0:
            (out / f"{session_id}.json").write_text(exported.stdout)
            assert v12check.problems(json.loads(exported.stdout)) == []
        else:
            assert exported.stderr.startswith(f"error: no session {session_id} in ")
    (out / "log.txt").write_text(log)
    report = io.StringIO()
    with redirect_stdout(report):
        failed = expect_facts.main(str(case), str(out))
    return report.getvalue() if failed else ""
