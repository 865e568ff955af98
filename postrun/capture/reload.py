"""SIGHUP: the capture's configuration read again, and checked before anything stops."""

from __future__ import annotations

from postrun.agents.registry import Source, enabled_roots
from postrun.capture.context import CaptureContext
from postrun.errors import NotFound, PostrunError
from postrun.settings import LoadedSettings, paths_for


def reloaded_context(context: CaptureContext) -> CaptureContext | None:
    """The context with the configuration read again (SIGHUP); None when there is nothing to
    apply: the file is broken (the previous configuration stays) or nothing changed."""
    logger = context.logger
    if context.reload is None:
        return None
    try:
        loaded = context.reload()
    except PostrunError as exc:
        logger.error(f"capture: configuration not reloaded: {exc}; keeping the previous one")
        return None
    for warning in loaded.warnings:
        logger.warning(warning)
    settings = loaded.settings
    if settings.db != context.settings.db:
        logger.warning(
            f"capture: the store cannot change while capture runs; still using {context.settings.db}"
            " (restart capture to switch)"
        )
        settings = settings.model_copy(update={"db": context.settings.db})
        loaded = LoadedSettings(settings, loaded.config_path, loaded.config_found, loaded.sources, loaded.warnings)
    source = str(loaded.config_path) if loaded.config_found else f"{loaded.config_path} (absent: defaults)"
    if settings == context.settings:
        logger.info(f"capture: configuration re-read from {source}; nothing changed")
        return None
    before = {(agent.kind, root.path) for agent, root in enabled_roots(context.loaded, context.environ)}
    new = [agent.source(root) for agent, root in enabled_roots(loaded, context.environ)]
    problem = next(
        (found for source in new if (source.adapter.kind, source.root) not in before if (found := _unlistable(source))),
        None,
    )
    if problem is not None:
        logger.error(f"capture: configuration not reloaded: {problem}; keeping the previous one")
        return None
    context.set_log_level(settings.log_level)
    logger.info(f"capture: configuration reloaded from {source}")
    return CaptureContext(
        loaded=loaded,
        paths=paths_for(loaded, context.environ),
        environ=context.environ,
        logger=logger,
        progress=None,
        reload=context.reload,
        on_ready=context.on_ready,
        set_log_level=context.set_log_level,
        clock=context.clock,
    )


def _unlistable(source: Source) -> PostrunError | None:
    """Why capture could not list a new root (None: it can, or the root is missing and is waited for)."""
    try:
        source.list()
    except NotFound:
        return None
    except PostrunError as exc:
        return exc
    return None
