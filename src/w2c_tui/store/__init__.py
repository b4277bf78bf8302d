"""The session store: files only. Layout and names, append-only JSONL, the lock, audit events,
call traces (packing, indexing), the small metadata documents' writers and usage accounting.

Reading a session into its typed record (manifest, metrics, rows, the earlier suite's layout)
is `w2c_tui.session`, the layer above.
"""
