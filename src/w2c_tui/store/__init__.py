"""The session store: layout, append-only JSONL, audit events, session metadata."""
