"""A function call that no item describes, as step parts, from the call and its output.

This is the per-call fallback: a failed patch, a goal tool, an unknown tool, a refused
escalation, or any call of a legacy rollout has only ``function_call`` (or
``custom_tool_call`` / ``local_shell_call``) and ``function_call_output`` lines. Also here:
the decision of every tool step, which Codex never writes and is read from the call.
"""

from __future__ import annotations

import re
from typing import Any

from postrun.agents.codex.items import OUTPUT_HEADERS, Parts, tool_error
from postrun.agents.codex.values import command_text, decoded, joined_texts, local_path, mapping, text

# Tools that run a shell command: the unified exec tool, and the shell tools of older Codex.
EXEC_TOOL = "exec_command"
PATCH_TOOL = "apply_patch"
SHELL_TOOLS = frozenset({"shell", "shell_command", "container.exec", "local_shell"})
# A tool's output saying it did not run (the wording of the real rollouts). Only these: a tool
# the mode does not offer answers "request_user_input is unavailable in Default mode", which
# the mapping rule leaves an ordinary (ok) result.
UNSUPPORTED = "unsupported call:"  # a tool this Codex does not have, whatever its name
# The apply_patch tool (freeform or JSON) answers a patch it would not apply with these and
# writes no FileChange item: the patch did not land, so the step failed (§5.3 counts the
# same words failed for an exec_command).
FAILURE_PREFIXES = (
    UNSUPPORTED,
    "unable to ",
    "failed to parse",
    "apply_patch verification failed",
    "apply_patch handler received",
)
# Codex refused the call: the policy forbids asking (a command under any policy but on-request,
# whose name Codex writes: Never, UnlessTrusted, OnFailure; an MCP tool), or the reviewer said no
# (``exec_command failed: CreateProcess { message: "Rejected(…``). Codex's own text is the whole
# result (or one text part of it), so it must start the text: a command that ran and printed
# these words (a grep over Codex's source) was not refused.
REFUSAL = re.compile(
    r"(?:[\w.]+ failed: )?(?:approval policy is \w+; reject command"
    r"|MCP tool call requires approval, but approval policy is never"
    r'|CreateProcess \{ message: "Rejected\()'
)
NO_RESULT = "no result recorded; turn ended"
_EXIT = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)\s*$", re.MULTILINE)
# What Codex writes first when it cut a process's output before the model saw it: "Warning:
# truncated output" (0.171), "Total output lines: N" (older ones, in the output or in the
# lines before "Output:").
_TRUNCATED = ("Warning: truncated output", "Total output lines: ")


def output_text(output: Any) -> str | None:
    """An output as text: itself, the text parts of a content list, or an object's ``content``."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return joined_texts(output, "\n")
    if isinstance(output, dict):
        return output_text(output.get("content")) if "content" in output else None
    return None


def refused(*outputs: Any) -> str | None:
    """The refusal text when one of ``outputs`` says Codex refused the call: the output (or
    one of its text parts) starts with Codex's refusal."""
    for output in outputs:
        found = output_text(output)
        if found is not None and any(REFUSAL.match(piece.lstrip()) for piece in (found, *_parts(output))):
            return found
    return None


def _parts(output: Any) -> list[str]:
    """The texts of an output's content parts (an MCP result puts its timing lines in one)."""
    content = output.get("content") if isinstance(output, dict) else output
    if not isinstance(content, list):
        return []
    return [piece for part in content if (piece := text(mapping(part).get("text"))) is not None]


def escalated(arguments: Any) -> bool:
    """The call asked to run outside the sandbox."""
    found = mapping(arguments)
    return found.get("sandbox_permissions") == "require_escalated" or found.get("with_escalated_permissions") is True


def decision(policy: str | None, arguments: Any, refusal: str | None, ran: bool) -> str:
    """``rejected`` when Codex refused it; under ``never`` nothing is asked (``auto``); a call
    that asked to leave the sandbox and ran (``ran``: it has a result or an item) was approved
    (``accepted``); the rest is ``auto``. One still waiting for its review, or whose process
    died before an answer, was never approved (codex.md §5.4: "that ran")."""
    if refusal is not None:
        return "rejected"
    if policy == "never" or policy is None:
        return "auto"
    return "accepted" if ran and escalated(arguments) else "auto"


def is_command_tool(name: str | None) -> bool:
    return name == EXEC_TOOL or name in SHELL_TOOLS


def call_parts(name: str, arguments: Any, output: Any, answered: bool, turn_cwd: str | None, ended: bool) -> Parts:
    """The step of a call without an item. ``answered``: its output line was read; ``ended``:
    its turn is over, so a call still unanswered never will be."""
    found = output_text(output) if answered else None
    # A shell tool named by a Codex that has none (``unsupported call: shell``) never ran: an
    # unknown tool's step, as any other name.
    if is_command_tool(name) and not (found is not None and found.startswith(UNSUPPORTED)):
        return _command(name, mapping(arguments), found, answered, turn_cwd, ended)
    raw: dict[str, Any] = {"arguments": arguments}
    if not answered:
        return _unanswered(Parts("other", {"tool_name": name, "raw": raw}), ended)
    raw["output"] = output
    failed = (found is not None and found.startswith(FAILURE_PREFIXES)) or mapping(output).get("success") is False
    if failed:
        return Parts("other", {"tool_name": name, "raw": raw}, "failed", error=tool_error(found or ""))
    said = _patch_failure(name, found)
    if said is not None:
        return Parts("other", {"tool_name": name, "raw": raw}, "failed", error=tool_error(said))
    return Parts("other", {"tool_name": name, "raw": raw})


def _patch_failure(name: str, found: str | None) -> str | None:
    """What the patch tool said when it ran as a process that failed: an older Codex answers
    apply_patch as it answers a shell call (``{"output", "metadata": {"exit_code"}}``, or
    "Exit code: N ... Output:"), so a non-zero code means the patch did not land (§5.4:
    failed when the exit code is not 0). None otherwise."""
    if name != PATCH_TOOL or found is None:
        return None
    result = _shell_result(found)
    if result is None or result[0] in (None, 0):
        return None
    return result[1]


def _unanswered(parts: Parts, ended: bool) -> Parts:
    if ended:
        return parts._replace(outcome="failed", content_status="reference_only", error=tool_error(NO_RESULT))
    return parts._replace(outcome="pending", content_status="reference_only")


def _command(
    name: str, arguments: dict[str, Any], found: str | None, answered: bool, turn_cwd: str | None, ended: bool
) -> Parts:
    """``found``: the output as text (``output_text``), None when it is not text or not read."""
    payload: dict[str, Any] = {}
    command = text(arguments.get("cmd")) if name == EXEC_TOOL else command_text(arguments.get("command"))
    if command is not None:
        payload["command"] = command
    cwd = local_path(arguments.get("workdir")) or local_path(arguments.get("working_directory")) or turn_cwd
    if cwd is not None:
        payload["cwd"] = cwd
    if not answered:
        return _unanswered(Parts("command", payload), ended)
    result = _shell_result(found) if found is not None else None
    if result is None:
        # Not a process's output: the call was refused or could not start (a rejection,
        # ``apply_patch verification failed: ...``); nothing ran, so nothing is inline.
        return Parts("command", payload, "failed", "reference_only", tool_error(found or ""))
    exit_code, stdout, cut = result
    if exit_code is not None:
        payload["exit_code"] = exit_code
    payload["stdout"] = stdout
    status = "reference_only" if cut else "inline"
    if exit_code is not None and exit_code != 0:
        return Parts("command", payload, "failed", status, tool_error(stdout))
    return Parts("command", payload, content_status=status)


def _shell_result(output: str) -> tuple[int | None, str, bool] | None:
    """(exit code, output text, whether Codex cut it) of a process's output envelope, or of an
    older Codex's JSON ``{"output", "metadata": {"exit_code"}}``; None when ``output`` is neither."""
    if output.startswith("{"):
        value = mapping(decoded(output))
        if isinstance(value.get("output"), str):
            code = mapping(value.get("metadata")).get("exit_code")
            return (code if type(code) is int else None), value["output"], value["output"].startswith(_TRUNCATED)
        return None
    head, marker, body = output.partition("Output:\n")
    if not marker or not head.startswith(OUTPUT_HEADERS):
        return None
    match = _EXIT.search(head)
    cut = body.startswith(_TRUNCATED) or any(line.startswith(_TRUNCATED) for line in head.splitlines())
    return (int(match.group(1)) if match else None), body, cut
