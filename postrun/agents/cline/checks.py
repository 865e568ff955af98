"""``postrun doctor``'s checks of Cline: its sessions root, and its approval settings beside it."""

from __future__ import annotations

from pathlib import Path

from postrun.agents.cline.approvals import cli_settings_path, global_state_path
from postrun.agents.cline.locate import list_sessions
from postrun.agents.registry import AgentCheck, root_hint
from postrun.errors import PostrunError
from postrun.text import plural

_ABSENT_HINT = "has Cline run on this machine? Otherwise set cline_dir in the config file (or POSTRUN_CLINE_DIR)"


def check_sessions(root: Path) -> tuple[AgentCheck, int | None]:
    """The sessions root exists and can be listed; also returns how many sessions it holds."""
    try:
        listing = list_sessions(root)
    except PostrunError as exc:
        return AgentCheck("sessions", "fail", str(exc), root_hint(exc, _ABSENT_HINT)), None
    count = len(listing.sessions)
    return AgentCheck("sessions", "ok", f"{plural(count, 'session', grouped=False)} in {root}", sessions=count), count


def check_approvals(sessions_root: Path) -> AgentCheck:
    """Which of Cline's approval settings exist next to the sessions root: the CLI's settings, VS
    Code's ``globalState.json``, or neither (then Cline's defaults decide; a warning)."""
    data_dir = sessions_root.parent
    sources = (
        ("CLI settings", cli_settings_path(data_dir)),
        ("VS Code's globalState.json", global_state_path(data_dir)),
    )
    found = [f"{name} {path}" for name, path in sources if path.is_file()]
    if found:
        return AgentCheck("approvals", "ok", "; ".join(found))
    (cli_name, cli_path), (vscode_name, vscode_path) = sources
    return AgentCheck(
        "approvals",
        "warn",
        f"neither {cli_name} ({cli_path}) nor {vscode_name} ({vscode_path}): defaults",
        "decisions follow Cline's defaults; if Cline runs here, check that the sessions folder is the one in"
        " its data folder",
    )
