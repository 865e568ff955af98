"""The two ways to run capture, as ``postrun capture`` starts them: once, or until stopped.

Each sets up logging and signal handling around the service and tears them down again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from postrun.capture.context import CaptureContext
from postrun.capture.log import configure_logging
from postrun.capture.once import OnceSummary, run_once
from postrun.capture.run import run_capture
from postrun.capture.signals import Signals
from postrun.errors import PostrunError
from postrun.heap import reuse_big_blocks
from postrun.paths import Paths
from postrun.settings import LoadedSettings


def capture_once(loaded: LoadedSettings, paths: Paths, environ: Mapping[str, str]) -> OnceSummary:
    """The start-up pass alone (``--once``): ingest what is new or changed, then stop."""
    log = configure_logging(loaded.settings.log_level, environ=environ)
    signals = Signals()
    signals.install()
    try:
        context = CaptureContext(loaded=loaded, paths=paths, environ=environ, logger=log.logger, progress=log.progress)
        return run_once(context, signals)
    finally:
        signals.restore()
        log.close()


def capture_until_stopped(
    loaded: LoadedSettings,
    paths: Paths,
    environ: Mapping[str, str],
    *,
    reload: Callable[[], LoadedSettings],
    on_ready: Callable[[int], None],
    daemon: bool,
) -> int:
    """Capture until SIGTERM/SIGINT; returns the exit code. Under ``--daemon`` this runs in
    the detached process and logs to the capture log (its stderr is /dev/null)."""
    reuse_big_blocks()  # live sessions' files are read whole after each message
    try:
        log = configure_logging(
            loaded.settings.log_level, environ=environ, log_file=paths.capture_log if daemon else None
        )
    except OSError as exc:
        raise PostrunError(str(paths.capture_log), f"cannot open the capture log ({exc.strerror or exc})") from None
    signals = Signals()
    signals.install()
    context = CaptureContext(
        loaded=loaded,
        paths=paths,
        environ=environ,
        logger=log.logger,
        progress=log.progress,
        reload=reload,
        on_ready=on_ready,
        set_log_level=log.set_level,
    )
    try:
        return run_capture(context, signals)
    except PostrunError as exc:
        if daemon:
            log.logger.error(f"capture: {exc}")
        raise
    except Exception as exc:
        if daemon:
            log.logger.error(f"capture: internal error: {type(exc).__name__}: {exc}", exc_info=True)
        raise
    finally:
        signals.restore()
        log.close()
