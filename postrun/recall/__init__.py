"""Recall for agents: ``postrun mcp``, a read-only MCP server over the store.

An agent asks what it and others did before (search, sessions, a session's steps, a file's
history); every answer is bounded, redacted by the one redactor and cites where a person
can look (``postrun show <id>``, the review app's page).

- ``bounds``: how much an answer holds, and the cuts that keep it there;
- ``citations``: the command and the review app's address for a session or a step;
- ``models``: the answers' shapes (their JSON schemas are the tools' output schemas);
- ``paths``: whether a step names a file; ``present``: a snippet, a turn, a file's touch as shown;
- ``tools``: the five tools over the store;
- ``server``: the MCP server over stdio; ``clients``: how each client registers it.
"""
