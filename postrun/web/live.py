"""Live pages: a Server-Sent Events stream that says when the store changed.

Each stream looks at a cheap change marker (the newest ``updated_at`` and verdict) every
``poll_seconds`` and sends ``change``; the page then fetches its own live part again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from postrun.errors import PostrunError
from postrun.web import data

MAX_STREAMS = 32
PING_SECONDS = 15.0


async def events(request: Request) -> Response:
    config = request.app.state.config
    if config.streams >= MAX_STREAMS:
        return PlainTextResponse("too many live pages open\n", 503)
    session_id = request.query_params.get("session") or None

    async def marker() -> str:
        return await anyio.to_thread.run_sync(data.change_marker, config.db, session_id)

    async def stream() -> AsyncIterator[str]:
        config.streams += 1
        try:
            last = await marker()
            yield "retry: 2000\n\nevent: ready\ndata: {}\n\n"
            quiet = 0.0
            while not config.stopping:
                await anyio.sleep(config.poll_seconds)
                try:
                    current = await marker()
                except PostrunError:
                    # A store busy past the timeout, or being restored, counts as unchanged and
                    # is looked at again on the next tick: the stream and the page stay as they are.
                    current = last
                if current != last:
                    last = current
                    quiet = 0.0
                    yield "event: change\ndata: {}\n\n"
                else:
                    quiet += config.poll_seconds
                    if quiet >= PING_SECONDS:
                        quiet = 0.0
                        yield ": ping\n\n"
        finally:
            config.streams -= 1

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"})
