"""The preference launches: `w2c-tui prefer A B` and `w2c-tui prefer-check`, each one session.

Each is a `Launch` like any other (providers, preflight, lock, manifest, runner, MLflow) with
its own plan: the session's "target" is the judge model, its one pipeline `prefer` or
`prefer_check`, its items one per (pair, call) (`keys.py`).

- `prefer`: the pairs are the examples both sessions answered in their llm_judge pipeline
  with the same question, tools and gold label in each session's dataset (sessions run on
  different dataset files: the others are dropped and counted, as `compare` does); A and B
  must be two sessions, not one folder named twice (or linked, or copied).
- `prefer-check`: the pairs are, for every example of the dataset file (the whole file, as
  judge-check), its right reference answer against each of the three wrong ones.

A session's fingerprint is its own (kind, judge, judge server, temperature, token limit, k,
seed, and the answers compared), so running the same command again resumes it; the default
run keys are `prefer` and `prefer-check`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from w2c_tui.config import LoadedConfig
from w2c_tui.data import Example, load_examples
from w2c_tui.data.when2call import file_sha256
from w2c_tui.engine.judge_options import JudgeOptions, judge_plan, with_judge
from w2c_tui.engine.launch import Launch, LaunchError
from w2c_tui.engine.plan import SessionPlan, dataset_path, resolve_run_key
from w2c_tui.labels import LABELS
from w2c_tui.pipelines import catalog
from w2c_tui.preference.keys import call_key, check_pair
from w2c_tui.preference.pipeline import PREFER, PREFER_CHECK, PreferCheckPipeline, PreferPipeline, session_answers
from w2c_tui.session.dataset import SessionDataset, recorded_sha256
from w2c_tui.session.models import manifest_of
from w2c_tui.store.jsonl import read_json

DEFAULT_K = 2


@dataclass(frozen=True)
class PreferenceOptions(JudgeOptions):
    k: int = DEFAULT_K  # each pair both ways


def preference_config(loaded: LoadedConfig, options: JudgeOptions) -> LoadedConfig:
    """The loaded config with this run's judge and temperature; LaunchError names a bad option."""
    return with_judge(loaded, options, k_at_zero=2, why="at temperature 0 a third call repeats the first")


def _items(pairs: list[tuple[str, Example]], k: int) -> list[Example]:
    """k items per pair, keyed <pair>#<call>, in pair order (the example's gold label kept)."""
    return [dataclasses.replace(example, uuid=call_key(pair, call)) for pair, example in pairs for call in range(k)]


@dataclass(frozen=True)
class SessionPair:
    """The two sessions `prefer` compares and the answers they share."""

    root_a: Path
    root_b: Path
    manifest_a: dict
    manifest_b: dict
    examples: list[Example]  # the examples both answered, the same in both, by uuid
    dataset: Path
    answers_digest: str
    n_dropped: int = 0  # answered in both, but another question, tools or gold label in each
    note: str | None = None  # said when the dataset files differ or examples were dropped


def _same_session(root_a: Path, root_b: Path, manifest_a: dict, manifest_b: dict) -> bool:
    """Whether A and B are one session: one folder (however spelled or linked), or a copy of it."""
    try:
        if os.path.samefile(root_a, root_b):
            return True
    except OSError:
        pass
    created = manifest_a.get("created_at")
    return created is not None and all(manifest_a.get(k) == manifest_b.get(k) for k in ("fingerprint", "run_key", "created_at"))


def _examples(manifest: dict, root: Path, answers: dict[str, dict[str, Any]], uuids: set[str]) -> tuple[dict[str, Example], Path | None]:
    """The session's examples among `uuids`, each with the gold label the session was scored with."""
    gold = {u: a["gold"] for u, a in answers.items() if isinstance(a.get("gold"), str)}
    return SessionDataset(manifest_of(manifest), root, stored_gold=lambda: gold).lookup(uuids)


def _same_example(a: Example, b: Example) -> bool:
    return (a.question, a.tools, a.correct_answer) == (b.question, b.tools, b.correct_answer)


def _dataset_note(manifest_a: dict, manifest_b: dict, n_kept: int, n_dropped: int) -> str | None:
    """What `prefer` says when A and B ran on different dataset files, as `compare` does."""
    sha_a, sha_b = (recorded_sha256(manifest_of(m)) for m in (manifest_a, manifest_b))
    files = (
        f"A and B ran on different dataset files (sha256 {sha_a[:12]}… and {sha_b[:12]}…)"
        if sha_a and sha_b and sha_a != sha_b
        else None
    )
    if files is None and not n_dropped:
        return None
    dropped = f"{n_dropped:,} answered in both with another question, tools or gold label in A than in B — dropped; "
    return f"{files or 'A and B'}: {dropped if n_dropped else ''}judged on the {n_kept:,} examples with the same question, tools and gold label in both"


def session_pair(root_a: Path, root_b: Path) -> SessionPair:
    """Read both sessions; LaunchError names what is missing or why they cannot be compared."""
    manifests = []
    for name, root in (("A", root_a), ("B", root_b)):
        manifest = read_json(Path(root) / "manifest.json")
        if not isinstance(manifest, dict):
            raise LaunchError(f"session {name}: {root} is not a session folder (no readable manifest.json)")
        manifests.append(manifest)
    if _same_session(Path(root_a), Path(root_b), *manifests):
        raise LaunchError(f"A and B are the same session ({root_a}): prefer compares the answers of two different sessions")
    answers_a, answers_b = session_answers(root_a), session_answers(root_b)
    for name, root, answers in (("A", root_a, answers_a), ("B", root_b, answers_b)):
        if not answers:
            raise LaunchError(f"session {name}: {root} has no judged llm_judge answer to compare")
    shared = sorted(answers_a.keys() & answers_b.keys())
    if not shared:
        raise LaunchError("sessions A and B answered no example in common (llm_judge)")
    found, path = _examples(manifests[0], Path(root_a), answers_a, set(shared))
    if not found or path is None:
        raise LaunchError(f"session A: its dataset file has none of the {len(shared):,} examples both sessions answered")
    found_b, path_b = _examples(manifests[1], Path(root_b), answers_b, set(shared))
    if not found_b or path_b is None:
        raise LaunchError(f"session B: its dataset file has none of the {len(shared):,} examples both sessions answered")
    both = [u for u in shared if u in found and u in found_b]
    kept = [u for u in both if _same_example(found[u], found_b[u])]
    if not kept:
        raise LaunchError(
            f"A and B ran on different dataset files: none of the {len(both):,} examples both answered has the same "
            "question, tools and gold label in both, so no answer of A can be judged against one of B"
        )
    examples = [found[u] for u in kept]
    digest = hashlib.sha256(json.dumps([[u, answers_a[u]["text"], answers_b[u]["text"]] for u in kept]).encode("utf-8")).hexdigest()
    n_dropped = len(both) - len(kept)
    return SessionPair(
        Path(root_a), Path(root_b), manifests[0], manifests[1], examples, Path(path), digest,
        n_dropped=n_dropped, note=_dataset_note(manifests[0], manifests[1], len(kept), n_dropped),
    )


class PreferLaunch(Launch):
    """`w2c-tui prefer A B`: B's answers against A's, pair by pair."""

    kind = PREFER
    default_run_key = "prefer"

    def __init__(
        self, loaded: LoadedConfig, session_a: Path, session_b: Path, options: PreferenceOptions | None = None,
        *, run_key: str | None = None,
    ) -> None:
        self.options = options or PreferenceOptions()
        self.pair = session_pair(Path(session_a).resolve(), Path(session_b).resolve())
        catalog.register(PreferPipeline)  # no plain launch runs it: this one does
        super().__init__(preference_config(loaded, self.options), run_key=run_key or self.default_run_key)

    @property
    def judge(self) -> str:
        return self.loaded.settings.models.judge_model

    async def run(self):
        if self.pair.note:
            self.notify(self.pair.note)  # the CLI prints it, the TUI shows it, before the first call
        return await super().run()

    def _plan(self, run_key, models, only, resume_session) -> tuple[str, list[SessionPlan]]:
        key = resolve_run_key(self.loaded, run_key)
        pair = self.pair
        items = _items([(e.uuid, e) for e in pair.examples], self.options.k)
        return key, [
            judge_plan(
                self.loaded, key, PREFER, self.options.k, items, digest_key="inputs_sha256",
                digest=pair.answers_digest, dataset=pair.dataset, dataset_sha256=file_sha256(pair.dataset),
            )
        ]

    def _manifest_sections(self, plan: SessionPlan) -> dict[str, Any]:
        return {
            PREFER: {
                "session_a": str(self.pair.root_a),
                "session_b": str(self.pair.root_b),
                "target_a": self.pair.manifest_a.get("target_model"),
                "target_b": self.pair.manifest_b.get("target_model"),
                "judge_model": self.judge,
                "k": self.options.k,
                "temperature": self.loaded.settings.pipelines.judge_temperature,
                "n_pairs": len(self.pair.examples),
                "n_dropped_other_example": self.pair.n_dropped,
                "dataset_note": self.pair.note,
            }
        }


def check_pairs(examples: list[Example]) -> list[tuple[str, Example]]:
    """(pair key, item) of every example's right answer against each wrong one, in label order."""
    return [
        (check_pair(example.uuid, label), example)
        for example in examples
        for label in LABELS
        if label != example.correct_answer and label in example.answers and example.correct_answer in example.answers
    ]


class PreferCheckLaunch(Launch):
    """`w2c-tui prefer-check`: the judge picks between the right reference answer and a wrong one."""

    kind = PREFER_CHECK
    default_run_key = "prefer-check"

    def __init__(self, loaded: LoadedConfig, options: PreferenceOptions | None = None, *, run_key: str | None = None) -> None:
        self.options = options or PreferenceOptions()
        catalog.register(PreferCheckPipeline)
        super().__init__(preference_config(loaded, self.options), run_key=run_key or self.default_run_key)

    @property
    def judge(self) -> str:
        return self.loaded.settings.models.judge_model

    def _plan(self, run_key, models, only, resume_session) -> tuple[str, list[SessionPlan]]:
        key = resolve_run_key(self.loaded, run_key)
        path = dataset_path(self.loaded)
        examples = sorted(load_examples(path), key=lambda e: e.uuid)
        digest = file_sha256(path)
        self.n_examples = len(examples)
        items = _items(check_pairs(examples), self.options.k)
        return key, [
            judge_plan(
                self.loaded, key, PREFER_CHECK, self.options.k, items, digest_key="inputs_sha256",
                digest=digest, dataset=path, dataset_sha256=digest,
            )
        ]

    def _manifest_sections(self, plan: SessionPlan) -> dict[str, Any]:
        return {
            PREFER_CHECK: {
                "judge_model": self.judge,
                "k": self.options.k,
                "temperature": self.loaded.settings.pipelines.judge_temperature,
                "n_examples": self.n_examples,
                "n_pairs": len(plan.examples) // self.options.k,
            }
        }
