"""A ``run_commands`` item's result text: output, stderr, exit code, detached logs.

- stdout, then ``\\n[stderr]\\n<stderr>`` when there is any;
- ``[Command exited with code N]`` as the first line (current Cline) or the last
  (older wording): it becomes the exit code and is removed with its newline;
  without it the exit code is unknown, never 0;
- a command that kept running while Cline proceeded points at a temporary log
  (two wordings, SDK and VS Code); the output so far is kept.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, NamedTuple

_STDERR = "\n[stderr]\n"
# At most 10 digits: every real exit status fits (Windows' are 32-bit); a longer number is
# text, not a status (it would not fit the store's integers either).
_EXIT_FIRST = re.compile(r"\A\[Command exited with code (?P<code>-?\d{1,10})\]\n?")
_EXIT_LINE = re.compile(r"\[Command exited with code (?P<code>-?\d{1,10})\]")
_STILL_RUNNING = re.compile(r"\A\[Command is still running\. Output will continue in (?P<ref>[^\]\n]+)\]\n?")
_PROCEEDED_OPENINGS = (
    "The user chose to proceed while the command",
    "The command was still starting or running after",
)
_PROCEEDED_REF = re.compile(r"redirected to this file[^:\n]*:[ \t]*(?P<ref>[^\n]*?)[ \t]*(?:\n|\Z)")
_OUTPUT_SO_FAR = "Output so far:\n"
TRUNCATED_QUERY = " ... [command truncated:"
_MORE_CHARS = re.compile(r" (?P<count>\d{1,12}) more chars")  # a longer count is no length


# Made for every command (a NamedTuple: built several times faster than a frozen dataclass).
class CommandOutput(NamedTuple):
    stdout: str | None = None
    stderr: str | None = None
    exit_code: int | None = None
    output_ref: str | None = None  # set when the command went on running: its log file

    def payload_fields(self) -> dict[str, Any]:
        fields = {
            "stdout": self.stdout,
            "stderr": self.stderr,
            "exit_code": self.exit_code,
            "output_ref": self.output_ref,
        }
        return {key: value for key, value in fields.items() if value is not None}


def parse_command_result(text: str, *, succeeded: bool = False) -> CommandOutput:
    """``succeeded``: Cline marked the item ``success: true``. It does so only for exit 0, so a
    marker with another code is then the command's own output (``cat`` of a detached command's
    log, which ends with one), kept as is: an exit code is never invented."""
    detached = _detached(text)
    if detached is not None:
        return detached
    exit_code: int | None = None
    first = _EXIT_FIRST.match(text)
    marker = (int(first["code"]), text[first.end() :]) if first is not None else _exit_line_last(text)
    if marker is not None and not (succeeded and marker[0] != 0):
        exit_code, text = marker
    return _split(text, exit_code=exit_code)


def _exit_line_last(text: str) -> tuple[int, str] | None:
    """The exit code when it is the last line (one newline may follow), and the text without that line.

    Only the last line is looked at: outputs can be hundreds of KB.
    """
    end = len(text) - 1 if text.endswith("\n") else len(text)
    line_start = text.rfind("\n", 0, end) + 1
    marker = _EXIT_LINE.fullmatch(text, line_start, end)
    if marker is None:
        return None
    return int(marker["code"]), text[: max(line_start - 1, 0)]


def _split(text: str, *, exit_code: int | None = None, output_ref: str | None = None) -> CommandOutput:
    stdout, found, stderr = text.partition(_STDERR)
    return CommandOutput(stdout, stderr if found else None, exit_code, output_ref)


def _detached(text: str) -> CommandOutput | None:
    """The output of a command Cline stopped waiting for, or None."""
    running = _STILL_RUNNING.match(text)
    if running is not None:
        rest = text[running.end() :]
        return _split(rest, output_ref=running["ref"]) if rest else CommandOutput(output_ref=running["ref"])
    if not text.startswith(_PROCEEDED_OPENINGS):
        return None
    ref = _PROCEEDED_REF.search(text)
    if ref is None or not ref["ref"]:
        return None
    _head, found, so_far = text.partition(_OUTPUT_SO_FAR)
    if found and so_far:
        return _split(so_far, output_ref=ref["ref"])
    return CommandOutput(output_ref=ref["ref"])


def render_command(request: Any) -> str | None:
    """A requested command as text: a string, or ``{command, args}`` with args quoted."""
    if isinstance(request, str):
        return request
    if not isinstance(request, dict) or not isinstance(request.get("command"), str):
        return None
    args = request.get("args")
    words = [str(arg) for arg in args] if isinstance(args, list) else []
    return " ".join([request["command"], *(shlex.quote(word) for word in words)])


def query_matches(query: str, command: str) -> bool:
    """Whether a result's ``query`` names ``command`` (queries over 200 chars are cut)."""
    if query == command:
        return True
    head, cut, tail = query.partition(TRUNCATED_QUERY)
    if not cut or not command.startswith(head):
        return False
    more = _MORE_CHARS.match(tail)
    return more is None or len(command) == len(head) + int(more["count"])
