"""The session as a typed record: its documents (manifest, metrics, done marker, rows) as models,
and the one reader that turns a session folder (ours, older versions, the earlier suite's) into them.

Kept free of imports so that `w2c_tui.session.<module>` loads only what it needs.
"""
