"""Every command that describes the setup names each watched agent's folder and whether it was
found (`status`, `config show`, `doctor`), and the `agents` setting chooses them: the real
`postrun` process."""

from __future__ import annotations

from pathlib import Path

from postrun.agents.registry import KINDS
from tests.conftest import run_postrun


def test_status_and_config_show_name_each_agents_folder_and_whether_it_was_found(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "data" / "sessions"
    env["POSTRUN_CLINE_DIR"] = str(root)
    missing = f"cline sessions folder: {root} (not found)"
    status = run_postrun("status", env=env)
    assert status.returncode == 3
    assert missing in status.stdout.splitlines()
    shown = run_postrun("config", "show", env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"# {missing}" in shown.stdout.splitlines()
    assert 'agents = ["cline"]  (env POSTRUN_AGENTS)' in shown.stdout.splitlines()  # the tests' environment
    assert f"{root}: no such folder" in run_postrun("doctor", env=env).stdout
    root.mkdir(parents=True)
    found = f"cline sessions folder: {root} (found)"
    assert found in run_postrun("status", env=env).stdout.splitlines()
    assert f"# {found}" in run_postrun("config", "show", env=env).stdout.splitlines()


def test_the_agents_setting_takes_known_kinds_only(env: dict[str, str], tmp_path: Path) -> None:
    env["POSTRUN_CLINE_DIR"] = str(tmp_path / "sessions")
    chosen = run_postrun("config", "show", env=env | {"POSTRUN_AGENTS": "cline"})
    assert 'agents = ["cline"]  (env POSTRUN_AGENTS)' in chosen.stdout.splitlines()
    refused = run_postrun("config", "show", env=env | {"POSTRUN_AGENTS": "cline,nobody"})
    assert refused.returncode == 78
    assert refused.stderr.splitlines() == [
        f"error: POSTRUN_AGENTS: agents: unknown agent 'nobody' (known: {', '.join(KINDS)}) (got 'cline,nobody')"
    ]
    config = tmp_path / "config.toml"
    config.write_text("agents = []\n")
    empty = run_postrun("--config", str(config), "config", "show", env=env)
    assert empty.returncode == 78
    assert empty.stderr.splitlines() == [f"error: {config}: agents: name at least one agent (got [])"]
