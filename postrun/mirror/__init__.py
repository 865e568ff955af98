"""The team mirror: the store's outbox drained into one PostgreSQL database (psycopg 3).

Only ``target`` is imported without the ``postgres`` extra: settings check the URI with it.
"""
