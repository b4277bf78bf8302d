"""The documentation keeps up with the code.

* Every audit `fallback_type` the package can write is described in
  docs/operations-audit-guide.md. The types are collected from the source, not listed
  here, so a new `.emit("...")` fails this test until it is documented.
* Every configuration key (walked from the pydantic models) is described in the section
  of docs/configuration.md that belongs to its TOML table.
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from w2c_tui.config.schema import Settings

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "w2c_tui"
DOCS = ROOT / "docs"
AUDIT_GUIDE = DOCS / "operations-audit-guide.md"
CONFIG_GUIDE = DOCS / "configuration.md"

# Functions whose positional string arguments (or `fallback_type=` keyword) are audit
# event types: AuditLog.emit("type", ...), compute.py's _emit(on_event, TYPE, ...),
# on_event(TYPE, ...).
EMITTERS = {"emit", "_emit", "on_event"}
# Files whose module-level string constants are event types (and FORCED_TYPES members).
CONSTANT_FILES = ("metrics/compute.py", "store/audit.py")
# A fallback type is a lower-case identifier, possibly with '-' (all_logprobs_-inf_...).
TYPE_SHAPE = re.compile(r"^[a-z][a-z0-9_\-]*_[a-z0-9_\-]+$")
# Types that must be found: if the collector misses one of these it is broken, not the docs.
KNOWN_CORE = {
    "judge_json_parse_failed_first",
    "judge_json_parse_failed_second_fallback_to_cannot_answer",
    "all_logprobs_-inf_string_fallback",
    "token_prefix_mismatch_lcp_split",
    "missing_prediction_uuid",
    "invalid_label_coercion_to_cannot_answer",
    "checkpoint_line_torn",
    "checkpoint_line_corrupt",
    "api_call_failed_example_skipped",
    "mlflow_tracking_failed",
    "completions_prompt_list_unsupported",
}
MIN_TYPES = 8


def _module_constants(tree: ast.Module) -> dict[str, list[str]]:
    """NAME -> string values of module-level assignments (plain strings and string sets)."""
    found: dict[str, list[str]] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and value is not None:
                found[target.id] = _strings_in(value, {})
    return found


def _strings_in(node: ast.expr, constants: dict[str, list[str]]) -> list[str]:
    """String values an expression can take: literals, a ? b : c, names of constants, sets."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings_in(node.body, constants) + _strings_in(node.orelse, constants)
    if isinstance(node, ast.Name):
        return list(constants.get(node.id, []))
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        return [s for element in node.elts for s in _strings_in(element, constants)]
    if isinstance(node, ast.Call) and node.args:  # frozenset({...})
        return [s for arg in node.args for s in _strings_in(arg, constants)]
    return []


def _callee_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return None


def collect_fallback_types() -> dict[str, set[str]]:
    """fallback_type -> files (relative to src/w2c_tui) that can emit or define it."""
    types: dict[str, set[str]] = {}

    def add(value: str, where: str) -> None:
        if TYPE_SHAPE.match(value):
            types.setdefault(value, set()).add(where)

    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
        constants = _module_constants(tree)
        # 1. Positional arguments of emitter calls (literals, conditionals, module constants).
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _callee_name(node) in EMITTERS:
                for arg in node.args:
                    if isinstance(arg, (ast.Dict, ast.Set, ast.List, ast.Tuple)):
                        continue  # details, not the type
                    for value in _strings_in(arg, constants):
                        add(value, rel)
                for keyword in node.keywords:
                    if keyword.arg == "fallback_type":
                        for value in _strings_in(keyword.value, constants):
                            add(value, rel)
        # 2. Event-type constants of the metrics stage and of the audit module.
        if rel in CONSTANT_FILES:
            for name, values in constants.items():
                if name.isupper() and name not in {"SEVERITIES"}:
                    for value in values:
                        add(value, rel)
        # 3. A plain text scan as a second net: `.emit(` followed by a string literal.
        for match in re.finditer(r"\.emit\(\s*\"([^\"]+)\"", text):
            add(match.group(1), rel)
    return types


def test_collector_finds_the_event_types():
    types = collect_fallback_types()
    assert len(types) >= MIN_TYPES, f"only {sorted(types)} found; the collector is broken"
    missing = KNOWN_CORE - types.keys()
    assert not missing, f"collector no longer sees {sorted(missing)}; fix the collector or the code"


def _catalogue(text: str) -> set[str]:
    """Types listed in the first column of the tables under the '## ... catalogue' heading."""
    chunks = _chunks(text)
    bodies = [body for heading, body in chunks.items() if "catalogue" in heading.lower()]
    assert bodies, f"{AUDIT_GUIDE.relative_to(ROOT)} has no '## ... catalogue' section"
    return {
        row
        for body in bodies
        for row in re.findall(r"^\|\s*`([^`]+)`\s*\|", body, flags=re.MULTILINE)
    }


def test_every_fallback_type_is_documented():
    text = AUDIT_GUIDE.read_text(encoding="utf-8")
    types = collect_fallback_types()
    listed = _catalogue(text)
    undocumented = sorted(t for t in types if t not in listed)
    assert not undocumented, (
        f"the event catalogue of {AUDIT_GUIDE.relative_to(ROOT)} lacks these audit event types: "
        + ", ".join(f"{t} (from {', '.join(sorted(types[t]))})" for t in undocumented)
    )


def test_every_catalogued_fallback_type_exists():
    """The catalogue lists no type the code can no longer write (stale docs)."""
    listed = _catalogue(AUDIT_GUIDE.read_text(encoding="utf-8"))
    stale = sorted(listed - collect_fallback_types().keys())
    assert not stale, f"catalogued but never emitted by src/w2c_tui: {stale}"


# --- configuration ----------------------------------------------------------------------


def _model_in(annotation: typing.Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def config_sections() -> dict[str, list[str]]:
    """Heading marker of each TOML table -> the keys it takes, walked from the models."""
    sections: dict[str, list[str]] = {}
    for name, info in Settings.model_fields.items():
        annotation = info.annotation
        origin = typing.get_origin(annotation)
        model = _model_in(annotation)
        if model is None:  # [debug], [available_models]: free-form tables
            sections[f"[{name}]"] = []
            continue
        marker = f"[{name}.<name>]" if origin is dict else f"[{name}]"
        keys = []
        for key, sub in model.model_fields.items():
            child = _model_in(sub.annotation)
            if child is not None and typing.get_origin(sub.annotation) is list:
                sections[f"[[{name}.{key}]]"] = list(child.model_fields)
            keys.append(key)
        sections[marker] = keys
    return sections


def _chunks(text: str) -> dict[str, str]:
    """Level-2 heading line -> its text up to the next level-2 heading."""
    chunks: dict[str, str] = {}
    heading = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            if heading is not None:
                chunks[heading] = "\n".join(lines)
            heading, lines = line, []
        elif heading is not None:
            lines.append(line)
    if heading is not None:
        chunks[heading] = "\n".join(lines)
    return chunks


def test_config_walk_sees_every_section():
    sections = config_sections()
    for marker in ("[run]", "[providers.<name>]", "[http]", "[models]", "[data]", "[pipelines]",
                   "[stability]", "[[stability.sweeps]]", "[mlflow]", "[debug]", "[available_models]"):
        assert marker in sections, f"{marker} not found in the settings model"
    assert "base_url" in sections["[providers.<name>]"]
    assert "temperatures" in sections["[[stability.sweeps]]"]
    assert sum(len(keys) for keys in sections.values()) >= 40


@pytest.mark.parametrize("marker", sorted(config_sections()))
def test_every_config_key_is_documented_in_its_section(marker):
    chunks = _chunks(CONFIG_GUIDE.read_text(encoding="utf-8"))
    matching = [body for heading, body in chunks.items() if f"`{marker}`" in heading]
    assert matching, f"{CONFIG_GUIDE.relative_to(ROOT)} has no '## ... `{marker}`' section"
    body = "\n".join(matching)
    missing = [key for key in config_sections()[marker] if f"`{key}`" not in body]
    assert not missing, f"keys of {marker} not described in its section: {missing}"


def test_the_overload_rule_is_documented_as_the_code_has_it():
    from w2c_tui.api.adaptive import OVERLOAD_COUNT, WINDOW

    rule = f"{OVERLOAD_COUNT} of the last {WINDOW}"
    for doc in ("configuration.md", "operations-audit-guide.md"):
        assert rule in " ".join((DOCS / doc).read_text().split()), doc
