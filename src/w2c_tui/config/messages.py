"""One readable line for one settings error, for forms (the field is shown beside it).

pydantic's own messages ("Input should be a valid integer, unable to parse string as an
integer") speak of types; a form's user wants the rule and what they typed. This reads the
error's `type`, `ctx` and `input` (a plain dict from `ValidationError.errors()`), so it needs
no pydantic import.
"""

from __future__ import annotations

from typing import Any, Mapping

from w2c_tui.redaction import is_secret_key, redact_url

_PLAIN = {
    "int_parsing": "a whole number, e.g. 16",
    "int_from_float": "a whole number, e.g. 16",
    "int_type": "a whole number, e.g. 16",
    "float_parsing": "a number, e.g. 0.7",
    "float_type": "a number, e.g. 0.7",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "missing": "required",
    "url_parsing": "a URL such as https://host/v1",
    "url_scheme": "a URL starting with http:// or https://",
    "list_type": "a comma-separated list",
    "string_type": "text",
}


def field_message(error: Mapping[str, Any]) -> str:
    """`a whole number, e.g. 16 (got 'abc')`, `at least 1 (got 0)`, or the validator's own sentence."""
    kind = str(error.get("type") or "")
    ctx = error.get("ctx") or {}
    if kind in _PLAIN:
        rule = _PLAIN[kind]
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = {"greater_than_equal": "ge", "greater_than": "gt", "less_than_equal": "le", "less_than": "lt"}[kind]
        words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}[bound]
        limit = ctx.get(bound)
        if isinstance(limit, float) and limit.is_integer():
            limit = int(limit)  # "more than 0", not "more than 0.0"
        rule = f"{words} {limit}"
    elif kind in ("string_too_short", "too_short"):
        least = ctx.get("min_length", 1)
        if kind == "string_too_short":
            rule = "must not be empty" if least == 1 else f"at least {least} characters"
        else:
            rule = f"at least {least} item{'s' if least != 1 else ''}"
    elif kind in ("string_too_long", "too_long"):
        rule = f"at most {ctx.get('max_length')} {'characters' if kind == 'string_too_long' else 'items'}"
    elif kind in ("literal_error", "enum"):
        rule = f"one of {ctx.get('expected')}"
    else:
        # Our validators write sentences already; pydantic prefixes them.
        message = str(error.get("msg") or "invalid value").removeprefix("Value error, ").removeprefix("Assertion failed, ")
        rule = message[:1].lower() + message[1:]
    return rule + _got(error)


def _got(error: Mapping[str, Any]) -> str:
    """What was typed, when it is short and not a secret (a token is never echoed)."""
    loc = tuple(error.get("loc") or ())
    given = error.get("input")
    if error.get("type") == "missing" or is_secret_key(loc[-1] if loc else None):
        return ""
    if isinstance(given, str):
        shown = redact_url(given)
        return f" (got {shown!r})" if len(shown) <= 40 else ""
    if isinstance(given, (int, float)) and not isinstance(given, bool):
        return f" (got {given})"
    return ""
