"""Ingesting sessions: an agent's files read, mapped to v1.2 records, flagged, validated, stored.

The one place where the adapters (``postrun.agents.registry``), the review rules and the store
meet; ``postrun ingest``, ``postrun reingest`` and capture all come through here. One word each:

- ``ingester``: one session read, prepared and stored (``Ingester``); its write is the one
  guarded write path (``Ingester.store``; the checks it makes inside its transaction: ``guard``).
- ``prepare``: read + map + flag + validate, nothing stored (``Prepared``).
- ``batches``: many sessions stored many to a transaction (``postrun ingest``'s targets,
  capture's start-up catch-up).
- ``pool``: the ingest processes that prepare a batched ingest's sessions beside the writer
  (``pool_process`` is their entry point).
- ``reflag``: stored sessions flagged again after the flag rules changed.
- ``raw``: the vault for people: ``reingest`` and ``raw``.
"""
