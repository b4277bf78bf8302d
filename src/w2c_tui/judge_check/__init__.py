"""Judge validation (`w2c-tui judge-check`) in one place: its launch, pipeline, the link a judged
session shows to its judge's check, and the text of its figures (its metrics: `metrics/judge_check.py`).

Kept free of imports so that `w2c_tui.judge_check.<module>` loads only what it needs.
"""
