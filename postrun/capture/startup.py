"""Capture's start-up pass: the sessions the start-up plan found new or changed, stored by the
batched ingest ``postrun ingest`` uses (``postrun.ingest.batches``: many sessions per
transaction, ingest processes for a long one), and recorded, logged and reported as ``IngestJob`` does
for each session.

The catch-up is taken a batch at a time: between two batches the worker goes back to live
work (a session being written must not wait for a year of history), then resumes it where
it stopped, its ingest processes still running.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from postrun.agents.registry import Location
from postrun.capture.freshness import FingerprintKey, fingerprint_key
from postrun.errors import PostrunError
from postrun.ingest.batches import BatchesStopped, Placed, committed_batches
from postrun.ingest.ingester import Ingester, IngestOutcome, collector_paused, goes_on
from postrun.records import SourceFile

if TYPE_CHECKING:
    from postrun.capture.job import IngestJob, JobResult


class StartupCatchUp:
    """The start-up catch-up of one ``IngestJob``, kept between two batches. One thread at a time."""

    def __init__(self, job: IngestJob) -> None:
        self.job = job
        self._batches: Generator[list[Placed], None, None] | None = None
        self._ingester: Ingester | None = None
        # The fingerprints each session had before the catch-up read it: what the book records.
        self._keys: dict[str, FingerprintKey] = {}
        self._open: list[str] = []  # the sessions it stored that may be written again, in order
        self._kept: OrderedDict[str, Any] = OrderedDict()  # the newest of their mapping caches

    def run(self, session_ids: Sequence[str], pause: Callable[[], bool]) -> Iterator[tuple[str, JobResult]]:
        """Store ``session_ids`` in order (the catch-up under way goes on where it stopped),
        yielding each session's result once its transaction committed, until ``pause()`` is
        true after a batch, all are stored, or the store fails (the host retries the rest
        later) or is replaced (the host catches up the new one)."""
        job = self.job
        if not job.check_store():
            job.host.retry_catch_up(job.faults.delay)
            return
        with collector_paused():
            batches = self._started(session_ids)
            while True:
                try:
                    results = next(batches)
                except StopIteration:
                    self._warm_caches()
                    self.close()
                    return
                except BatchesStopped as stop:
                    yield from self._reported(stop.failures)  # their own failures, whatever the store's
                    self.close()
                    job.host.retry_catch_up(job.faults.failed(stop.error))
                    return
                yield from self._reported(results)
                if any(isinstance(result, IngestOutcome) for _, result in results):
                    job.on_ingested()
                # Once every session is reported the catch-up runs on to its end (its processes
                # end there), whatever is due: there is nothing left to resume it for.
                if self._keys and (pause() or not job.check_store() or job.ingester is not self._ingester):
                    return

    def close(self) -> None:
        """Abandon the catch-up under way (between two batches: nothing is left uncommitted);
        its ingest processes end."""
        batches, self._batches, self._ingester = self._batches, None, None
        self._keys, self._open, self._kept = {}, [], OrderedDict()
        if batches is not None:
            with collector_paused():
                batches.close()

    def _warm_caches(self) -> None:
        """The mapping caches of the last open sessions stored, as many as the caches keep: an
        open session is likely to be written again soon, and its next ingest then parses only
        what was added. The catch-up kept the caches of those it mapped in line; one mapped in
        a process (which cannot hand its caches back) is mapped again here."""
        job = self.job
        for session_id in self._open[-job.caches.limit :] if job.caches.limit else ():
            if job.caches.get(session_id) is not None:
                continue  # a live ingest since the catch-up stored it left a newer one
            cache = self._kept.get(session_id)
            try:
                if cache is None:
                    cache = job.ingester.mapping_cache(job.watched(session_id).source.location(session_id))
            except Exception:  # noqa: BLE001 - only a cache: the next ingest reports what is wrong
                continue
            job.caches.put(session_id, cache)

    def _keep(self, session_id: str, cache: Any) -> None:
        limit = self.job.caches.limit
        self._kept[session_id] = cache
        self._kept.move_to_end(session_id)
        while len(self._kept) > limit:
            self._kept.popitem(last=False)

    def _started(self, session_ids: Sequence[str]) -> Generator[list[Placed], None, None]:
        if self._batches is not None and self._ingester is self.job.ingester:
            return self._batches
        self.close()
        job = self.job
        locations: list[Location] = []
        for session_id in session_ids:
            watched = job.watched(session_id)
            location = watched.source.location(session_id)
            locations.append(location)
            key = watched.book.seen_key(session_id)
            self._keys[session_id] = key if key is not None else _key_now(job, location)
        self._ingester = self.job.ingester
        self._batches = committed_batches(self._ingester, locations, keep_cache=self._keep)
        return self._batches

    def _reported(self, results: Sequence[Placed]) -> Iterator[tuple[str, JobResult]]:
        job = self.job
        for _, result in results:
            session_id = result.session_id
            assert session_id is not None  # a committed result is always a session's
            key = self._keys.pop(session_id)
            location = job.watched(session_id).source.location(session_id)
            if isinstance(result, IngestOutcome):
                if goes_on(location, result):
                    self._open.append(session_id)
                # What a problem is logged by names the file's fingerprint, as a live read's does.
                files = _files_now(job, location) if result.unread or result.incomplete else ()
                yield session_id, job.stored(result, key, files, "startup", None)
                continue
            present = job.present_files(location)
            if not isinstance(present, tuple):
                yield session_id, present  # gone meanwhile
                continue
            yield session_id, job.not_stored(session_id, result.error, key, present, None)


def _files_now(job: IngestJob, location: Location) -> tuple[SourceFile, ...]:
    with contextlib.suppress(PostrunError):
        return job.watched(location.session_id).source.adapter.fingerprint(location)
    return ()


def _key_now(job: IngestJob, location: Location) -> FingerprintKey:
    return fingerprint_key(_files_now(job, location))
