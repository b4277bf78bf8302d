"""Pairwise preference (`w2c-tui prefer A B`, `w2c-tui prefer-check`) in one place: its launches,
pipelines, row keys, the link a preference session shows to its judge's newest check, and the
text of its figures (its metrics: `metrics/preference.py`; its prompt: `prompts/preference.py`).

Kept free of imports so that `w2c_tui.preference.<module>` loads only what it needs.
"""
