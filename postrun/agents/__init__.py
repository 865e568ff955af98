"""Agent adapters: each turns one agent's own files into v1.2 records (``registry`` knows them by kind)."""
