"""Phrases our prompts always contain, so the simulated endpoint can tell roles apart.

The judge prompt and the MCQ prompt must include these verbatim; the sim looks for them
in the last user message.
"""

JUDGE_MARKER = '{"classification":'
MCQ_MARKER = "Reply with a single digit"
# The preference prompt (prompts/preference.py): the sim answers it as the preference judge.
PREFERENCE_MARKER = '{"preferred":'
