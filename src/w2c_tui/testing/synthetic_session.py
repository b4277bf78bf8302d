"""Synthetic sessions on disk, in the real layout, for tests, screenshots and benchmarks.

Everything is derived from a seed (timestamps included), so two calls with the same
arguments write byte-identical folders: snapshot tests stay stable, and the benchmark can
build a session as large as the official test set (3,652 examples, a k=10 sweep,
150,000 call-trace rows) without any server.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from w2c_tui.labels import LABELS
from w2c_tui.store.layout import (
    AUDIT_FILE,
    AUDIT_SUMMARY_FILE,
    DONE_FILE,
    JUDGE_DECISIONS,
    LOGPROB_DEBUG,
    LOGPROB_PREDICTIONS,
    MANIFEST_FILE,
    MCQ_PREDICTIONS,
    METRICS_FILE,
    TARGET_RESPONSES,
    SessionPaths,
    stability_exp_name,
)

_BASE_TIME = datetime(2026, 1, 15, 10, 0, 0, tzinfo=timezone.utc)
_TOPICS = ("weather", "stock price", "flight status", "exchange rate", "calendar event", "recipe", "translation", "route")
_CITIES = ("London", "Lyon", "Osaka", "Lagos", "Lima", "Oslo", "Pune", "Quito")
_ANSWERS = {
    "direct": "Here is the answer straight away: {topic} for {city} is fine today.",
    "tool_call": '<tool_call>{{"name": "get_{slug}", "arguments": {{"city": "{city}"}}}}</tool_call>',
    "request_for_info": "Which {topic} do you mean exactly, and for which date?",
    "cannot_answer": "Sorry, I cannot help with the {topic} of {city}: none of my tools does that.",
}


def _ts(seconds: float) -> str:
    stamp = _BASE_TIME + timedelta(seconds=seconds)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def write_dataset(path: Path, n_examples: int, seed: int = 7) -> list[dict[str, Any]]:
    """A When2Call-shaped JSONL file; golds cycle through the four labels."""
    rng = random.Random(seed)
    records = []
    for index in range(n_examples):
        topic = _TOPICS[index % len(_TOPICS)]
        city = _CITIES[(index // len(_TOPICS)) % len(_CITIES)]
        slug = topic.replace(" ", "_")
        tools = [
            json.dumps(
                {
                    "name": f"get_{slug}",
                    "description": f"Look up the {topic} of a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                }
            )
            for _ in range(1 + index % 2)
        ]
        records.append(
            {
                "uuid": _uuid(rng),
                "source": "synthetic",
                "source_id": str(index),
                "question": f"Example {index}: what is the {topic} in {city} right now?",
                "correct_answer": LABELS[index % len(LABELS)],
                "answers": {label: _ANSWERS[label].format(topic=topic, city=city, slug=slug) for label in LABELS},
                "tools": tools,
                "target_tool": tools[0],
                "orig_question": None,
                "held_out_param": "city" if LABELS[index % len(LABELS)] == "request_for_info" else None,
                "orig_tools": None,
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")
    return records


@dataclass
class SyntheticSession:
    root: Path
    dataset: Path
    n_examples: int
    n_calls: int


class _Writer:
    """Buffered JSONL writing (the store's appender flushes per row: too slow for 150k rows)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = path.open("w", encoding="utf-8", buffering=1 << 20)
        self.count = 0

    def write(self, row: dict[str, Any]) -> None:
        self.fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.count += 1

    def close(self) -> None:
        self.fh.close()


def _predict(rng: random.Random, gold: str, skill: float) -> str:
    if rng.random() < skill:
        return gold
    return rng.choice([label for label in LABELS if label != gold])


class _SessionWriter:
    """One synthetic session being written: its files, the shared clock and random stream, the
    audit events and predictions that the metrics are computed from at the end."""

    def __init__(self, paths: SessionPaths, fingerprint: str, target_model: str, seed: int,
                 skill: float, exp_names: list[str], retry_rate: float) -> None:
        self.paths, self.fingerprint, self.target_model = paths, fingerprint, target_model
        self.rng = random.Random(seed)
        self.skill, self.retry_rate = skill, retry_rate
        self.writers: dict[tuple[str, str], _Writer] = {}
        self.events: dict[str, list[dict[str, Any]]] = {name: [] for name in exp_names}
        self.predictions: dict[str, dict[str, str | None]] = {name: {} for name in exp_names}
        self.stability_rows: list[dict[str, Any]] = []
        self.clock = 0.0

    def out(self, exp_name: str, name: str) -> _Writer:
        key = (exp_name, name)
        if key not in self.writers:
            path = self.paths.calls_file(exp_name) if name == "calls" else self.paths.checkpoint_file(exp_name, name)
            self.writers[key] = _Writer(path)
        return self.writers[key]

    def event(self, exp_name: str, uuid: str, kind: str, stage: str, severity: str = "warning", details: dict | None = None) -> None:
        self.events[exp_name].append(
            {
                "ts_utc": _ts(self.clock),
                "run_key": self.paths.run_key,
                "session_fingerprint": self.fingerprint,
                "exp_name": exp_name,
                "api_seed": 42,
                "uuid": uuid,
                "pipeline": exp_name,
                "stage": stage,
                "fallback_type": kind,
                "severity": severity,
                "details": details or {},
            }
        )

    def call(self, exp_name: str, uuid: str, stage: str, endpoint: str, request: dict[str, Any], answer: str) -> None:
        """One call-trace row per attempt; retried attempts (HTTP 429) pad the traces up to `calls_total`."""
        rng = self.rng
        attempts = 1
        while rng.random() < self.retry_rate / (1 + self.retry_rate) and attempts < 6:
            attempts += 1
        for attempt in range(1, attempts + 1):
            self.clock += 0.05
            last = attempt == attempts
            response: Any = (
                {"id": f"cmpl-{attempt}", "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}],
                 "usage": {"prompt_tokens": 420 + len(answer) // 4, "completion_tokens": 12}}
                if last
                else "rate limited: slow down"
            )
            self.out(exp_name, "calls").write(
                {
                    "ts_utc": _ts(self.clock),
                    "provider": "jrc",
                    "base_url": "https://api.example.org/v1",
                    "model": request.get("model"),
                    "endpoint": endpoint,
                    "settings": {"temperature": request.get("temperature", 0.0), "seed": 42},
                    "pipeline": stage,
                    "exp_name": exp_name,
                    "uuid": uuid,
                    "attempt": attempt,
                    "request": request,
                    "response": response,
                    "error": None if last else "HTTP 429",
                    "status": 200 if last else 429,
                    "latency_ms": round(rng.lognormvariate(6.3, 0.5), 1),
                    "retry_cause": None if last else "429",
                    "usage": response.get("usage") if isinstance(response, dict) else None,
                }
            )

    # One example through each pipeline: its calls, checkpoint rows and audit events.

    def llm_judge(self, example: Any, messages: list[dict[str, str]]) -> None:
        rng, uuid, gold, target_model = self.rng, example.uuid, example.correct_answer, self.target_model
        label = _predict(rng, gold, self.skill)
        answer = example.answers[label]
        self.call("llm_judge", uuid, "target", "/chat/completions", {"model": target_model, "messages": messages}, answer)
        self.out("llm_judge", TARGET_RESPONSES).write(
            {"uuid": uuid, "raw_text": answer, "reasoning_text": None, "native_tool_calls": None,
             "target_model": target_model, "temperature": 0.0, "api_seed": 42}
        )
        failed_first = rng.random() < 0.04
        judge_raw = ("I think it is " if failed_first else "") + json.dumps({"classification": label, "rationale": "fits"})
        self.call("llm_judge", uuid, "judge", "/chat/completions", {"model": "gpt-oss-120b", "messages": messages[-1:]}, judge_raw)
        fell_back = failed_first and rng.random() < 0.3
        decision = label if not fell_back else "cannot_answer"
        if failed_first:
            self.event("llm_judge", uuid, "judge_json_parse_failed_first", "judge_parse", details={"raw_preview": judge_raw[:60]})
        if fell_back:
            self.event("llm_judge", uuid, "judge_json_parse_failed_second_fallback_to_cannot_answer", "judge_parse")
        self.out("llm_judge", JUDGE_DECISIONS).write(
            {"uuid": uuid, "predicted_label": decision, "judge_raw": judge_raw, "judge_rationale": "fits",
             "judge_parse_path": "fallback" if fell_back else ("repair:json" if failed_first else "json"),
             "judge_parse_failed_first": failed_first, "judge_parse_failed_second": fell_back,
             "judge_used_retry": failed_first, "judge_fallback_to_cannot_answer": fell_back,
             "judge_exception_first": "no JSON object" if failed_first else None, "judge_exception_second": None,
             "judge_raw_retry": judge_raw if failed_first else None, "judge_model": "gpt-oss-120b", "gold_label": gold}
        )
        self.predictions["llm_judge"][uuid] = decision

    def mcq(self, example: Any, messages: list[dict[str, str]]) -> None:
        uuid, gold, target_model = example.uuid, example.correct_answer, self.target_model
        label = _predict(self.rng, gold, self.skill - 0.05)
        index = LABELS.index(label)
        self.call("mcq", uuid, "mcq", "/chat/completions", {"model": target_model, "messages": messages, "max_tokens": 8}, str(index))
        self.out("mcq", MCQ_PREDICTIONS).write(
            {"uuid": uuid, "gold_label": gold, "gold_index": LABELS.index(gold), "answer_names": list(LABELS),
             "predicted_index": index, "predicted_label": label, "raw_mcq_output": str(index),
             "target_model": target_model, "temperature": 0.0, "api_seed": 42}
        )
        self.predictions["mcq"][uuid] = label

    def mcq_logprob(self, example: Any) -> None:
        rng, uuid, gold, target_model = self.rng, example.uuid, example.correct_answer, self.target_model
        label = _predict(rng, gold, self.skill - 0.1)
        self.call("mcq_logprob", uuid, "mcq_logprob", "/completions",
                  {"model": target_model, "prompt": [example.question] * 5, "echo": True, "logprobs": 1, "max_tokens": 1}, "")
        fallback = rng.random() < 0.01
        scores = {name: (-4.0 if name == label else -9.0 - rng.random() * 6) for name in LABELS}
        row: dict[str, Any] = {"uuid": uuid, "gold_label": gold, "gold_index": LABELS.index(gold),
                               "target_model": target_model, "template_family": "llama3", "split": "token_count",
                               "used_lcp_split": False, "mode": "string_fallback" if fallback else "llama_scoring"}
        for variant in ("raw", "norm_chars", "norm_bytes", "norm_tokens"):
            row[f"predicted_label_{variant}"] = label
            row[f"scores_{variant}"] = None if fallback else [scores[name] for name in LABELS]
        if fallback:
            self.event("mcq_logprob", uuid, "all_logprobs_-inf_string_fallback", "scoring", details={"fallback_label": label})
        self.out("mcq_logprob", LOGPROB_PREDICTIONS).write(row)
        for name in LABELS:
            tokens = example.answers[name].split(" ")
            self.out("mcq_logprob", LOGPROB_DEBUG).write(
                {"uuid": uuid, "gold_label": gold, "answer_name": name, "choice_text_preview": example.answers[name][:120],
                 "len_chars": len(example.answers[name]), "len_bytes": len(example.answers[name].encode()),
                 "num_tokens": len(tokens), "raw_score": None if fallback else scores[name],
                 "token_norm_score": None if fallback else scores[name] / len(tokens),
                 "char_norm_score": None if fallback else scores[name] / len(example.answers[name]),
                 "byte_norm_score": None if fallback else scores[name] / len(example.answers[name].encode()),
                 "used_lcp_split": False, "prompt_tok_count": 120, "lcp": 120, "split": "token_count",
                 "continuation_tokens": [[f" {t}", round(-rng.random() * 3, 2)] for t in tokens],
                 "context_tail_tokens": ["<|eot_id|>", "<|start_header_id|>", "assistant", "<|end_header_id|>", "\n\n"]}
            )
        self.predictions["mcq_logprob"][uuid] = label

    def sweep(self, sweep: str, stability_k: int, example: Any, messages: list[dict[str, str]]) -> None:
        rng, uuid, gold, target_model = self.rng, example.uuid, example.correct_answer, self.target_model
        from w2c_tui.metrics import stability_row

        confidence = rng.random()
        labels = [gold if rng.random() < 0.4 + confidence * 0.6 else rng.choice(LABELS) for _ in range(stability_k)]
        texts = []
        for run, run_label in enumerate(labels):
            text = example.answers[run_label]
            texts.append(text)
            self.call(sweep, uuid, f"run{run}", "/chat/completions", {"model": target_model, "messages": messages, "temperature": 0.7}, text)
            self.call(sweep, uuid, f"run{run}-judge", "/chat/completions", {"model": "gpt-oss-120b", "messages": messages[-1:]},
                      json.dumps({"classification": run_label}))
        row = {"uuid": uuid, "gold_label": gold, "run_labels": labels, **stability_row(labels, gold),
               "eval_type": "llm_judge", "target_model": target_model, "temperature": 0.7, "judge_model": "gpt-oss-120b",
               "forced_delimiter": "", "ckpt_name": sweep, "run_target_texts": texts,
               "run_judge_raw_outputs": [json.dumps({"classification": lab}) for lab in labels]}
        self.out(sweep, f"{sweep}.jsonl").write(row)
        self.stability_rows.append(row)
        self.predictions[sweep][uuid] = row.get("mode_label")

    def close(self) -> int:
        """Close the checkpoint files; the number of call-trace rows written."""
        n_calls = sum(w.count for (_, name), w in self.writers.items() if name == "calls")
        for writer in self.writers.values():
            writer.close()
        return n_calls

    def finish(self, exp_name: str, examples: list[Any], sweep: str | None) -> None:
        """A completed pipeline's metrics, audit summary, audit log and done marker."""
        from w2c_tui.metrics import compute_metrics, stability_summary
        from w2c_tui.store.audit import summarize

        paths = self.paths
        metrics = compute_metrics(examples, self.predictions[exp_name], bootstrap_seed=42, n_boot=200)
        metrics["exp_name"] = exp_name
        metrics["complete"] = True
        if exp_name == "mcq_logprob":
            metrics["primary_variant"] = "raw"
            metrics["variants"] = {v: {k: metrics[k] for k in ("accuracy", "macro_f1")} for v in ("raw", "norm_chars", "norm_bytes", "norm_tokens")}
        if exp_name == sweep:
            summary = stability_summary(self.stability_rows)
            summary.pop("mode_classification", None)
            metrics.update(summary)
        paths.artifacts(exp_name).mkdir(parents=True, exist_ok=True)
        (paths.artifacts(exp_name) / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
        (paths.artifacts(exp_name) / AUDIT_SUMMARY_FILE).write_text(json.dumps(summarize(self.events[exp_name]), indent=2) + "\n", encoding="utf-8")
        paths.checkpoints(exp_name).mkdir(parents=True, exist_ok=True)
        with (paths.checkpoints(exp_name) / AUDIT_FILE).open("w", encoding="utf-8") as fh:
            for item in self.events[exp_name]:
                fh.write(json.dumps(item) + "\n")
        (paths.checkpoints(exp_name) / DONE_FILE).write_text(
            json.dumps({"exp_name": exp_name, "finished_at": _ts(3600), "n_examples": len(examples)}) + "\n", encoding="utf-8"
        )


def _write_manifest(paths: SessionPaths, *, fingerprint: str, target_model: str, dataset: Path, n_examples: int,
                    stability_k: int, exp_names: list[str], n_loaded: int, simulated: bool, mlflow: bool) -> None:
    manifest = {
        "schema_version": 1,
        "fingerprint": fingerprint,
        "run_key": paths.run_key,
        "created_at": _ts(0),
        "updated_at": _ts(3600),
        "config": {
            "models": {"target_model": target_model, "judge_model": "gpt-oss-120b", "template_family": "auto"},
            "data": {"eval_data_path": str(dataset), "n_per_label": n_examples // 4},
            "stability": {"enabled": bool(stability_k)},
        },
        "target_model": target_model,
        "judge_model": "gpt-oss-120b",
        "template_family": "llama3",
        "exp_names": exp_names,
        "n_examples": n_loaded,
        "dataset": {"path": str(dataset), "sha256": "synthetic", "size_bytes": dataset.stat().st_size},
        "simulated": simulated,
        "providers": {"jrc": "https://api.example.org/v1"},
        "w2c_tui_version": "synthetic",
    }
    paths.root.mkdir(parents=True, exist_ok=True)
    (paths.root / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    if mlflow:
        (paths.mlflow_ids).write_text(
            json.dumps({"parent_run_id": "0f" * 16, "experiment_id": "1", "child_run_ids": {}}) + "\n", encoding="utf-8"
        )


def write_session(
    workdir: Path,
    *,
    run_key: str = "synthetic",
    fingerprint: str = "5e55a0c0ffee0001",
    target_model: str = "llama-3.3-70b-instruct",
    n_examples: int = 24,
    stability_k: int = 0,
    calls_total: int = 0,
    seed: int = 1,
    skill: float = 0.7,
    dataset: Path | None = None,
    simulated: bool = False,
    mlflow: bool = False,
    pipelines: tuple[str, ...] = ("llm_judge", "mcq", "mcq_logprob"),
) -> SyntheticSession:
    """Write one complete session; `calls_total` > 0 pads the traces with retried attempts."""
    from w2c_tui.data import load_examples

    workdir = Path(workdir)
    dataset = dataset or workdir / "synthetic_when2call.jsonl"
    if not dataset.exists():
        write_dataset(dataset, n_examples)
    examples = load_examples(dataset)[:n_examples]
    paths = SessionPaths.under(workdir, run_key, fingerprint)
    sweep = stability_exp_name("llm_judge", stability_k, 0.7) if stability_k else None
    exp_names = [*pipelines, *([sweep] if sweep else [])]
    _write_manifest(paths, fingerprint=fingerprint, target_model=target_model, dataset=dataset, n_examples=n_examples,
                    stability_k=stability_k, exp_names=exp_names, n_loaded=len(examples), simulated=simulated, mlflow=mlflow)

    base_calls = len(examples) * (("llm_judge" in pipelines) * 2 + ("mcq" in pipelines) + ("mcq_logprob" in pipelines) + 2 * stability_k)
    retry_rate = max(0.0, (calls_total - base_calls) / base_calls) if calls_total and base_calls else 0.0
    session = _SessionWriter(paths, fingerprint, target_model, seed, skill, exp_names, retry_rate)
    for example in examples:
        messages = [
            {"role": "system", "content": "You may call these tools:\n" + "\n".join(example.tools)},
            {"role": "user", "content": example.question},
        ]
        if "llm_judge" in pipelines:
            session.llm_judge(example, messages)
        if "mcq" in pipelines:
            session.mcq(example, messages)
        if "mcq_logprob" in pipelines:
            session.mcq_logprob(example)
        if sweep:
            session.sweep(sweep, stability_k, example, messages)
    n_calls = session.close()
    for exp_name in exp_names:
        session.finish(exp_name, examples, sweep)
    return SyntheticSession(paths.root, dataset, len(examples), n_calls)
