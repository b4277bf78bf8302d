"""The one exception for a provider answer we cannot read (the runner records it as `bad_response`).

Only the code that reads a provider's answer raises it, so a ValueError, KeyError or
TypeError anywhere else is our own bug and stops the pipeline instead of hiding among
per-example provider faults.
"""

from __future__ import annotations


class BadResponse(ValueError):
    """The provider answered, but the answer does not hold what the request asked for."""
