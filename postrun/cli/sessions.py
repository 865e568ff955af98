"""Commands over stored sessions: ``ingest``, ``sessions``, ``show``, ``export``, ``search``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from postrun.cli.app import app
from postrun.cli.common import check_agent, command, given_path, load, path_text, progress, say
from postrun.errors import UsageError
from postrun.text import json_escaped, one_line, plural, printable, revealed


@app.command()
@command
def ingest(
    targets: Annotated[
        list[str],
        typer.Argument(metavar="TARGET", help="Session ids, session folders, messages files or sessions folders."),
    ],
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent whose files these are (default: the first known).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Record sessions again that `postrun forget` forgot.")] = False,
) -> None:
    """Ingest sessions by hand.

    A bare id is looked up in the agent's own sessions folder (Cline: ~/.cline/data/sessions);
    an existing path wins over an id.
    Prints one line per session stored; exits 1 when any target or session failed.
    Forgotten sessions and excluded workspaces are not recorded (a warning each).
    """
    from postrun.heap import give_back_big_blocks
    from postrun.ingest.ahead import started_ahead

    give_back_big_blocks()  # a one-shot batched ingest: its peak memory, not a capture's re-reads
    # Before the library is imported and the settings loaded: the processes start up meanwhile
    # (those ``main`` started as the interpreter started, if it guessed this command).
    with started_ahead(targets, os.environ, agent) as started:
        from postrun.agents.registry import adapter, default_kind
        from postrun.ingest.batches import ingest_targets
        from postrun.review.exclude import Exclusions

        check_agent(agent)
        kind = agent or default_kind()
        loaded, paths = load()
        report = ingest_targets(
            targets,
            agent=kind,
            db=paths.db,
            default_root=adapter(kind).lookup_roots(loaded, os.environ),
            max_bytes=loaded.settings.max_bytes,
            keep_raw=loaded.settings.keep_raw,
            exclusions=Exclusions.of(loaded.settings.exclude, str(paths.home)),
            force=force,
            progress=progress(),
            processes=loaded.settings.ingest_processes,
            started=started,
        )
    for note in report.notes:
        say(f"note: {note}")
    for skipped in report.skipped:
        if skipped.warn:
            say(f"warning: {printable(str(skipped.path))}: skipped ({skipped.reason})")
    if report.reflagged:
        say(f"re-flagged {plural(report.reflagged, 'stored session')} under the current flag rules")
    for not_recorded in report.not_recorded:
        say(f"warning: {not_recorded}")
    for outcome in report.outcomes:
        if outcome.revived:
            say(f"note: {outcome.session_id} had been forgotten; --force recorded it again")
        typer.echo(
            f"{outcome.status} {kind} session {outcome.session_id}: {plural(outcome.steps, 'step')},"
            f" {plural(outcome.turns, 'turn')}, {plural(outcome.segments, 'segment')} -> {paths.db}"
        )
        for problem in outcome.unread:
            say(f"warning: {problem}; the rest of the session was stored (what was stored of this file is kept)")
    for failure in report.failures:
        say(f"error: {failure.error}")
    if report.failures:
        raise typer.Exit(max(int(failure.error.exit_code) for failure in report.failures))
    if not report.outcomes and not report.not_recorded:
        say(f"warning: {' '.join(printable(target) for target in targets)}: no sessions found")


@app.command()
@command
def sessions(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's sessions.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="At most this many.")] = None,
    verdict: Annotated[
        str | None,
        typer.Option("--verdict", metavar="VERDICT", help="Only looks_good, needs_follow_up or unreviewed sessions."),
    ] = None,
    flagged: Annotated[bool, typer.Option("--flagged", help="Only sessions with a flagged step.")] = False,
) -> None:
    """List stored sessions, newest first: start (UTC), agent, id, open or ended, steps, failed, flagged, title,
    verdict."""
    import orjson

    from postrun.store.verdicts import VERDICT_LABELS
    from postrun.views import kept_raw_versions, reviewed_sessions

    check_agent(agent)
    _, paths = load()
    reviewed = reviewed_sessions(paths.db, agent=agent, limit=limit, verdict=verdict, flagged=flagged)
    summaries = [summary for summary, _ in reviewed]
    verdicts = {summary.id: found for summary, found in reviewed if found is not None}
    if as_json:
        kept = kept_raw_versions(paths.db, [s.id for s in summaries])
        listing = [
            s.as_json()
            | {"raw_versions": kept.get(s.id, [])}
            | ({"verdict": verdicts[s.id].as_json()} if s.id in verdicts else {})
            for s in summaries
        ]
        # C1 and bidi controls as \u escapes, as in every JSON export: the same values, shown inert.
        typer.echo(json_escaped(orjson.dumps(listing, option=orjson.OPT_INDENT_2)).decode())
        return
    if not summaries:
        say(f"no sessions stored in {paths.db}")
        return
    id_width = max((len(s.id) for s in summaries), default=0)
    for s in summaries:
        started = s.started_utc[:19].replace("T", " ")
        state = "open" if s.open else "ended"
        failed = f"{s.failed_steps} failed" if s.failed_steps else ""
        flags = f"{s.flagged_steps} flagged" if s.flagged_steps else ""
        typer.echo(
            f"{started}Z  {s.agent}  {s.id:<{id_width}}  {state:<5}  {plural(s.steps, 'step'):>11}  {failed:<10}"
            f"  {flags:<11}  {revealed(one_line(s.title, 80))}".rstrip()
            + (f"  [{VERDICT_LABELS[verdicts[s.id].state]}]" if s.id in verdicts else "")
        )


@app.command()
@command
def show(
    session: Annotated[str, typer.Argument(metavar="ID", help="Session id (a unique prefix is enough).")],
    with_history: Annotated[
        bool, typer.Option("--history", help="Also list earlier versions of records that changed or vanished.")
    ] = False,
    redact: Annotated[
        bool, typer.Option("--redact", help="Mask secrets and show the home folder as ~ (as shared exports do).")
    ] = False,
) -> None:
    """A readable timeline of one session, by turn.

    Each step is one line: #seq, type, what it did, then in brackets its outcome ([ok], failed
    (exit code, error type), or pending: no result yet), the user's decision when there was
    one (accepted, rejected), and "reference only" when the agent's files do not hold all of
    the step's content (a command left running, an output kept elsewhere): what they hold is
    shown. Below a step, "error:" is the first line of why it failed and each "!" line one of
    its flags (danger, warn or info, with the reason). ↳ starts the steps of a helper (a
    sub-agent), indented under the step that started it.
    """
    from postrun.views import show_session

    _, paths = load()
    # Text an agent wrote may hide words in characters that show as nothing: shown as escapes.
    shown = show_session(paths.db, session, with_history=with_history, redact=redact, home=paths.home)
    typer.echo(revealed(shown), nl=False)


@app.command()
@command
def export(
    session: Annotated[str, typer.Argument(metavar="ID", help="Session id (a unique prefix is enough).")],
    export_format: Annotated[
        str,
        typer.Option(
            "--format", "-f", metavar="FORMAT", help="json (the v1.2 envelope), jsonl, markdown or html (one file)."
        ),
    ] = "json",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", parser=path_text, metavar="PATH", help="Write to this file instead of stdout."),
    ] = None,
    redact: Annotated[
        bool | None,
        typer.Option(
            "--redact/--no-redact",
            help="Mask secrets as [REDACTED:<kind>] and show the home folder as ~"
            " (default: on for markdown and html, off for json and jsonl).",
        ),
    ] = None,
) -> None:
    """Export one session. A redacted export lists on stderr what it masked, to check before sharing."""
    from postrun.paths import write_private_file
    from postrun.views import EXPORT_FORMATS, export_session

    if export_format not in EXPORT_FORMATS:
        raise UsageError("--format", f"unknown format {export_format!r} (known: {', '.join(EXPORT_FORMATS)})")
    if output is not None:
        given_path(output)
    _, paths = load()
    if output is not None and paths.is_store_file(output):
        # Never lose: `-o` replaces the file it names, and the store is not an export's to replace.
        raise UsageError("--output", f"{printable(os.fspath(output))} is the store's own file ({paths.db})")
    exported = export_session(paths.db, session, export_format, redact=redact, home=paths.home)
    if output is None:
        sys.stdout.buffer.write(exported.content)
        sys.stdout.flush()
    else:
        write_private_file(output, exported.content)
    if exported.redacted:
        for masked in exported.masked:
            say(f"masked {masked.kind} in {printable(masked.where)}: {masked.context}")
        say(f"redacted: {plural(len(exported.masked), 'secret')} masked, home folder shown as ~")


@app.command()
@command
def search(
    query: Annotated[
        str,
        typer.Argument(
            metavar="[QUERY]",
            help="Words that must all appear (command, output, text, path, tool); optional with a filter.",
        ),
    ] = "",
    step_type: Annotated[
        str | None, typer.Option("--type", metavar="TYPE", help="command, edit, read, message or other.")
    ] = None,
    failed: Annotated[bool, typer.Option("--failed", help="Only failed steps.")] = False,
    since: Annotated[
        str | None, typer.Option("--since", metavar="DATE", help="Only steps at or after this date (2026-11-29).")
    ] = None,
    flag: Annotated[
        str | None,
        typer.Option(
            "--flag",
            metavar="KIND",
            help="Only steps with this flag (dangerous_command, secret_in_output, outside_workspace,"
            " sensitive_read, rejected, failed, or any); without QUERY, every such step with its reasons.",
        ),
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", metavar="KIND", help="Only this agent's sessions.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many hits.")] = 50,
    redact: Annotated[
        bool, typer.Option("--redact", help="Mask secrets and show the home folder as ~ (as shared exports do).")
    ] = False,
) -> None:
    """Full-text search over every stored step; matches are marked »like this«."""
    import orjson

    from postrun.views import has_store, search_steps

    check_agent(agent)
    _, paths = load()
    hits = search_steps(
        paths.db,
        query,
        step_type=step_type,
        failed=failed,
        since=since,
        flag=flag,
        agent=agent,
        limit=limit,
        redact=redact,
        home=paths.home,
    )
    if as_json:
        typer.echo(json_escaped(orjson.dumps([hit.as_json() for hit in hits], option=orjson.OPT_INDENT_2)).decode())
        return
    if not hits:
        say("no matching steps" if has_store(paths.db) else f"no sessions stored in {paths.db}")
    for hit in hits:
        line = (
            f"{hit.session_id}  #{hit.seq} {printable(hit.step_id)}  {hit.at}  {printable(hit.actor_id)}"
            f"  {hit.type} {hit.outcome}  {hit.snippet}"
        )
        typer.echo(revealed(line))  # characters that show as nothing, as escapes: they hide no words
