"""Independent check: w2c-tui's `mcq_logprob` scores equal lm-eval 0.4.13 `local-completions`.

One simulated endpoint (`w2c-tui sim`) serves both sides:

* w2c-tui: `w2c-tui run --only mcq_logprob`, once per template family, on a small JSONL of
  chosen examples; the per-choice `raw_score` is read from
  `checkpoints/mcq_logprob/debug_per_choice.jsonl`.
* lm-eval: `LocalCompletionsAPI.loglikelihood` on the same (context, continuation) pairs,
  built with w2c-tui's own `build_loglik_requests` (bos=False, delimiter "", as the pipeline
  does). lm-eval runs in its own virtualenv (this script re-runs itself there with
  `--worker`): its `_encode_pair`, request building and `parse_logprobs` run unmodified.
  Only the tokenizer is supplied: lm-eval's own "remote" backend (`RemoteTokenizer`, which
  calls the server's `/tokenize` and `/detokenize`), with its `/tokenizer_info` look-up
  answered locally because the sim does not serve that endpoint.

Two comparisons per choice: the log-likelihood (equal within 1e-9), and, where w2c-tui
sent token ids, whether lm-eval sent exactly the same ids (its /completions requests are
recorded on the way out; w2c-tui's come from its call traces). The second matters because
the sim scores a token from the 64 characters before it, so a different start of the
context (a BOS) leaves the scores equal.

`--merging-tokenizer` starts the sim with one extra tokenizer rule (runs of 2-3
punctuation characters are one piece, so `:{"`, `]{"` and `|>{` merge across the
context/choice boundary as in real BPE vocabularies). It patches the sim's `PIECE`
pattern in the sim process at start-up; it is not a mode of the sim itself.

With `--server URL --tokenizer DIR` the same comparison runs against a real server instead
of the sim (e.g. vLLM): w2c-tui's session and lm-eval's requests go to URL, lm-eval tokenizes
with the Hugging Face tokenizer in DIR (`tokenizer_backend="huggingface"`, the files the
server itself loads), the examples are the `--examples` with the shortest prompts, the family
is the model's own (`auto`, unless `--families` names one), and scores are equal within
`--tolerance` (default 1e-3 there: the server computes each number in a different batch).
The table then also gives the argmax agreement per example.

Usage (from the repository root):

    .venv/bin/python benchmarks/lm_eval_parity.py [--lm-eval-python /work/lmeval-venv/bin/python]
        [--examples 5] [--families plain mistral] [--merging-tokenizer] [--sim-arg=--imitate=vllm]
    .venv/bin/python benchmarks/lm_eval_parity.py --server http://127.0.0.1:8000 \
        --tokenizer .cache/models/SmolLM2-135M-Instruct-fp32 --lm-eval-python .cache/lmeval-venv/bin/python --examples 9

With `--official` the comparison is with the paper's protocol itself: lm-eval's
`simple_evaluate` runs NVIDIA's When2Call task files (`--task-dir`: their yamls and
`process_docs`, the data path rewritten to the same examples' file; `when2call-nemotron.yaml`,
which the repository lacks, written from `when2call.yaml`), w2c-tui runs each official format
(`when2call`, `when2call-<format>`), and per format the table gives the (context, continuation)
pairs that are the same, the log-likelihoods that differ, and acc, acc_norm, macro F1 and the
tool hallucination rate (NVIDIA's additional_metrics.py on lm-eval's logged samples) beside
w2c-tui's `official` block. Stock lm-eval 0.4.13 lacks the `macro_f1` the yamls ask for: the
worker registers it (per sample (gold, argmax), scikit-learn's macro average).

    .venv/bin/python benchmarks/lm_eval_parity.py --official --examples 300 --lm-eval-python .cache/lmeval-venv/bin/python

`--src DIR` checks another w2c-tui source tree (e.g. `git archive HEAD src | tar -x -C DIR`).
Exit status: 0 every choice equal, 1 some differ (score or token ids), 2 set-up error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LM_EVAL_VERSION = "0.4.13"
TOLERANCE = 1e-9
SIM_SEED = "7"
API_SEED = 42
MODEL = "parity-sim-model"
BANNER_URL = re.compile(r"(http://127\.0\.0\.1:\d+)/v1")
# The extra rule of --merging-tokenizer: 2-3 punctuation characters form one piece.
MERGING_PIECE = r" [^\W\d_]{1,7}|[^\W\d_]{1,8}|\d{1,8}|[^\w\s]{2,3}|."
TAIL = 4  # tokens shown on each side of the boundary


class SetupError(Exception):
    """A readable one-line reason the check could not run."""


# --------------------------------------------------------------------------- lm-eval side
# Runs under the lm-eval virtualenv: imports nothing from w2c_tui.


def local_completions(job: dict):
    """lm-eval's own `local-completions` model for the job's server, and lm-eval's version."""
    import logging

    import lm_eval
    import lm_eval.utils
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    logging.getLogger("lm_eval").setLevel(logging.WARNING)
    version = getattr(lm_eval, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("lm_eval")
    tokenizer_dir = job.get("tokenizer")

    class SimTokenizer(lm_eval.utils.RemoteTokenizer):
        """lm-eval's RemoteTokenizer; the sim has no /tokenizer_info, and no special tokens."""

        def _validate_server(self) -> None:
            pass

        @property
        def tokenizer_info(self) -> dict:
            return {"eos_token": None, "bos_token": None, "pad_token": None}

    if tokenizer_dir:  # a real server: the tokenizer files it loads, read by lm-eval's HF backend
        backend = {"tokenizer_backend": "huggingface", "tokenizer": tokenizer_dir}
    else:  # TemplateAPI imports RemoteTokenizer from lm_eval.utils when it builds the model.
        lm_eval.utils.RemoteTokenizer = SimTokenizer
        backend = {"tokenizer_backend": "remote"}
    lm = LocalCompletionsAPI(
        base_url=job["root"] + "/v1/completions",
        model=job["model"],
        max_length=10_000_000,  # never left-truncate (the default is 2048)
        seed=job["seed"],
        max_retries=1,
        num_concurrent=job.get("concurrency", 1),
        **backend,
    )
    # What makes this lm-eval's exact path: its own tokenizer, and token-id prompts.
    assert lm.tokenizer_backend == backend["tokenizer_backend"] and lm.tokenized_requests and lm.backend == "causal"
    return lm, version


def worker(requests_path: str, results_path: str) -> None:
    from lm_eval.api.instance import Instance

    job = json.loads(Path(requests_path).read_text())
    if job.get("official"):
        official_worker(job, results_path)
        return
    lm, version = local_completions(job)
    pairs = [(r["context"], r["continuation"]) for r in job["requests"]]
    instances = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]
    sent: list[list[int]] = []
    model_call = lm.model_call

    def recording_model_call(messages, **kwargs):  # passes everything through; only notes the prompts
        sent.extend(list(m) for m in messages)
        return model_call(messages=messages, **kwargs)

    lm.model_call = recording_model_call
    amodel_call = lm.amodel_call

    async def recording_amodel_call(session, sem, messages, **kwargs):  # the path of num_concurrent > 1
        sent.extend(list(m) for m in messages)
        return await amodel_call(session, sem, messages, **kwargs)

    lm.amodel_call = recording_amodel_call
    started = time.monotonic()
    answers = lm.loglikelihood(instances, disable_tqdm=True)
    elapsed = time.monotonic() - started

    pieces: dict[int, str] = {}

    def piece(token_id: int) -> str:
        if token_id not in pieces:
            pieces[token_id] = lm.tokenizer.decode([token_id])
        return pieces[token_id]

    out = []
    recomputed: list[list[int]] = []
    for (context, continuation), (logprob, greedy) in zip(pairs, answers):
        # The same call lm-eval made inside loglikelihood (deterministic), repeated to show the boundary.
        ctx_ids, cont_ids = lm._encode_pair(context, continuation)
        recomputed.append(ctx_ids + cont_ids)
        whole = lm.tok_encode(context + continuation)  # moving whitespace does not change the whole
        out.append(
            {
                "loglikelihood": logprob,
                "is_greedy": greedy,
                "n_context_tokens": len(ctx_ids),
                "n_continuation_tokens": len(cont_ids),
                "merged": whole[: len(ctx_ids)] != ctx_ids,
                "prompt_ids": ctx_ids + cont_ids,
                "context_tail": [piece(t) for t in ctx_ids[-TAIL:]],
                "continuation_head": [piece(t) for t in cont_ids[:TAIL]],
                "whole_at_boundary": [piece(t) for t in whole[max(0, len(ctx_ids) - TAIL) : len(ctx_ids) + TAIL]],
            }
        )
    # lm-eval sends requests sorted by length: compare as sorted lists.
    if sorted(sent) != sorted(recomputed):
        raise SystemExit("lm-eval sent other prompts than _encode_pair gives on a second call")
    Path(results_path).write_text(json.dumps({"lm_eval_version": version, "seconds": elapsed, "results": out}))


def official_tasks(task_dir: Path, data: str, out: Path) -> None:
    """NVIDIA's task files in `out`, reading `data`; `when2call-nemotron.yaml`, which the
    repository lacks (utils.py has its process_docs), written from when2call.yaml."""
    shutil.copy(task_dir / "utils.py", out / "utils.py")
    shipped = "lm_eval/tasks/when2call/when2call_test_mcq.jsonl"
    for yaml in sorted(task_dir.glob("when2call*.yaml")):
        text = yaml.read_text()
        if shipped not in text:
            raise SystemExit(f"{yaml}: no data_files line naming {shipped}")
        (out / yaml.name).write_text(text.replace(shipped, data))
    default = (out / "when2call.yaml").read_text()
    (out / "when2call-nemotron.yaml").write_text(
        default.replace("task: when2call\n", "task: when2call-nemotron\n")
        .replace("utils.process_docs_default", "utils.process_docs_nemotron")
    )


def official_worker(job: dict, results_path: str) -> None:
    """lm-eval's `simple_evaluate` on NVIDIA's task files, as the paper's figures were made.

    Stock lm-eval 0.4.13 has no `macro_f1` the yamls name: registered here as a passthrough of
    (gold, argmax of the log-likelihoods) per sample, which additional_metrics.py reads from
    the logged samples, aggregated by scikit-learn's macro F1 (labels seen in either).
    """
    import importlib.util
    import tempfile

    import numpy as np
    from lm_eval import simple_evaluate
    from lm_eval.api.registry import register_aggregation, register_metric
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks import TaskManager
    from sklearn.metrics import f1_score

    @register_aggregation("macro_f1")
    def macro_f1_aggregation(items):
        golds, preds = zip(*items)
        return f1_score(golds, preds, average="macro")

    @register_metric(metric="macro_f1", higher_is_better=True, output_type="multiple_choice", aggregation="macro_f1")
    def macro_f1_passthrough(items):
        return items

    process_results = ConfigurableTask.process_results

    def with_macro_f1(self, doc, results):
        out = process_results(self, doc, results)
        if self.OUTPUT_TYPE == "multiple_choice" and "macro_f1" in self._metric_fn_list:
            out["macro_f1"] = (self.doc_to_target(doc), int(np.argmax([ll for ll, _ in results])))
        return out

    ConfigurableTask.process_results = with_macro_f1
    lm, version = local_completions(job)
    task_dir = Path(tempfile.mkdtemp(prefix="when2call-tasks-", dir=job["work"]))
    official_tasks(Path(job["task_dir"]), job["data"], task_dir)
    spec = importlib.util.spec_from_file_location("additional_metrics", Path(job["task_dir"]) / "additional_metrics.py")
    additional = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(additional)

    started = time.monotonic()
    evaluated = simple_evaluate(
        model=lm, tasks=job["tasks"], task_manager=TaskManager(include_path=str(task_dir)), num_fewshot=0,
        log_samples=True, bootstrap_iters=0,
    )
    elapsed = time.monotonic() - started
    tasks = {}
    for task in job["tasks"]:
        samples = sorted(evaluated["samples"][task], key=lambda sample: sample["doc_id"])
        logged = task_dir / f"samples_{task}.jsonl"  # what --log_samples writes, for NVIDIA's script
        logged.write_text("".join(json.dumps({"doc": s["doc"], "macro_f1": list(s["macro_f1"])}) + "\n" for s in samples))
        figures = evaluated["results"][task]
        tasks[task] = {
            "acc": figures["acc,none"],
            "acc_norm": figures["acc_norm,none"],
            "macro_f1": figures["macro_f1,none"],
            "tool_hallucination_rate": additional.calculate_hallucination_rate(str(logged), print_rate=False),
            "samples": [
                {
                    "uuid": s["doc"]["uuid"],
                    "pairs": [list(arguments) for arguments in s["arguments"]],
                    "loglikelihoods": [float(response[0]) for response in s["filtered_resps"]],
                }
                for s in samples
            ],
        }
    Path(results_path).write_text(json.dumps({"lm_eval_version": version, "seconds": elapsed, "tasks": tasks}))


# --------------------------------------------------------------------------- w2c-tui side


class Sim:
    """A `w2c-tui sim` process on a free loopback port."""

    def __init__(self, extra_args: list[str], merging: bool) -> None:
        argv = ["w2c-tui", "sim", "--port", "0", "--seed", SIM_SEED, *extra_args]
        if merging:
            code = (
                "import re, sys\n"
                "import w2c_tui.sim.tokenizer as t\n"
                f"t.PIECE = re.compile({MERGING_PIECE!r}, re.DOTALL)\n"
                f"sys.argv = {argv!r}\n"
                "from w2c_tui.cli import entry\n"
                "entry()\n"
            )
            command = [sys.executable, "-c", code]
        else:
            command = [sys.executable, "-m", "w2c_tui", *argv[1:]]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            match = BANNER_URL.search(line)
            if match:
                self.root = match.group(1)
                return
            if self.process.poll() is not None:
                break
        self.stop()
        raise SetupError(f"w2c-tui sim did not start: {self.process.stderr.read()[-500:]!r}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


class RealServer:
    """A server someone else started (--server): used as it is, never stopped."""

    def __init__(self, url: str) -> None:
        self.root = url.rstrip("/").removesuffix("/v1")

    def stop(self) -> None:
        pass


def first_model(url: str) -> str:
    import httpx

    root = url.rstrip("/").removesuffix("/v1")
    try:
        listed = httpx.get(f"{root}/v1/models", timeout=30).json().get("data") or []
    except (httpx.HTTPError, ValueError) as exc:
        raise SetupError(f"{root}/v1/models: {exc}") from None
    if not listed:
        raise SetupError(f"{root}/v1/models lists no model; name one with --model")
    return listed[0]["id"]


def shortest_examples(n: int) -> list:
    """The `n` bundled examples whose log-likelihood prompts are shortest (a real server is slower than the sim)."""
    from w2c_tui.data.when2call import load_examples
    from w2c_tui.prompts.mcq_logprob import build_loglik_requests

    examples = load_examples()
    examples.sort(key=lambda e: (len(build_loglik_requests(e, "plain", "", bos=False)[0]), e.uuid))
    return examples[:n]


def tokenize(client, root: str, text: str) -> list[int]:
    response = client.post(f"{root}/tokenize", json={"prompt": text})
    response.raise_for_status()
    return response.json()["tokens"]


def choose_examples(client, root: str, families: list[str], n: int, pool: int) -> list:
    """`n` examples whose choices merge with the context most often (under the sim's tokenizer).

    Candidates are the `pool` examples with the shortest prompts (to keep the run short);
    ties go to the shorter prompt.
    """
    from w2c_tui.data.when2call import load_examples
    from w2c_tui.prompts.mcq_logprob import build_loglik_requests
    from w2c_tui.scoring.loglik import move_trailing_whitespace

    examples = load_examples()
    examples.sort(key=lambda e: (len(build_loglik_requests(e, "plain", "", bos=False)[0]), e.uuid))
    ranked = []
    for example in examples[:pool]:
        merges = 0
        for family in families:
            context, continuations = build_loglik_requests(example, family, "", bos=False)
            ctx_ids = tokenize(client, root, move_trailing_whitespace(context, continuations[0])[0])
            for continuation in continuations:
                merges += tokenize(client, root, context + continuation)[: len(ctx_ids)] != ctx_ids
        ranked.append((-merges, len(build_loglik_requests(example, "plain", "", bos=False)[0]), example.uuid, example))
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:n]]


def write_dataset(folder: Path, uuids: set[str]) -> Path:
    from w2c_tui.data.when2call import BUNDLED_PATH

    lines = [line for line in BUNDLED_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = [line for line in lines if json.loads(line)["uuid"] in uuids]
    path = folder / "examples.jsonl"
    path.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    return path


def run_w2c(folder: Path, root: str, family: str, data: Path, model: str = MODEL, concurrency: int = 4) -> tuple[dict, float]:
    """w2c-tui's own run of mcq_logprob with `family`: {(uuid, label): debug row}."""
    config = folder / f"config-{family}.toml"
    config.write_text(
        f"""
[run]
workdir_base = "{folder / 'workdir'}"
api_seed = {API_SEED}

[providers.sim]
base_url = "{root}/v1"
max_concurrency = {concurrency}
default = true

[models]
target_model = "{model}"
template_family = "{family}"
force_target_delimiter = ""

[data]
eval_data_path = "{data}"
use_full_dataset = true

[pipelines]
do_llm_judge = false
do_mcq = false
do_mcq_logprob = true

[mlflow]
enabled = false
"""
    )
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "RUN_KEY" and not k.startswith("TOKEN_")}
    done = subprocess.run(
        [sys.executable, "-m", "w2c_tui", "run", "--config", str(config), "--run-key", f"parity-{family}"],
        capture_output=True,
        text=True,
        env=env,
    )
    elapsed = time.monotonic() - started
    # The run key holds this one session; found on disk, so a failing summary print does not hide it.
    sessions = folder / "workdir" / "runs" / f"parity-{family}" / "sessions"
    found = sorted(sessions.glob("*/checkpoints/mcq_logprob/debug_per_choice.jsonl"))
    if len(found) != 1:
        raise SetupError(
            f"w2c-tui run ({family}) exited {done.returncode} and left {len(found)} debug files: {done.stderr.strip()[-400:]}"
        )
    rows = [json.loads(line) for line in found[0].open()]
    if done.returncode != 0:
        print(f"warning: w2c-tui run ({family}) exited {done.returncode} after writing {len(rows)} debug rows: "
              f"{done.stderr.strip().splitlines()[-1][:200]}")
    exchanges: dict[str, list[tuple]] = {}
    from w2c_tui.api.logprob import scored_prompts
    from w2c_tui.store.call_files import iter_calls, trace_path  # read back as exchanged, packed or not

    traces = {trace_path(p) for p in found[0].parents[2].glob("artifacts_local/mcq_logprob/llm_calls/*.jsonl*")}
    for call in traces:
        for trace in iter_calls(call):  # read back as exchanged
            if trace.get("endpoint") == "/completions" and trace.get("status") == 200:
                exchanges.setdefault(trace.get("uuid"), []).append(((trace.get("request") or {}).get("prompt"), trace.get("response")))
    # The ids each choice was scored on: sent as token ids, or listed by the echo of its text.
    sent = {uuid: scored_prompts(pairs) for uuid, pairs in exchanges.items()}
    by_choice = {(r["uuid"], r["answer_name"]): r for r in rows}
    for row in by_choice.values():
        row["_sent_ids"] = sent.get(row["uuid"], [])
    return by_choice, elapsed


def run_lm_eval(
    python: str, folder: Path, root: str, requests: list[dict], *, model: str = MODEL, tokenizer: str | None = None,
    concurrency: int = 1,
) -> dict:
    return run_lm_eval_job(python, folder, {
        "root": root, "model": model, "seed": API_SEED, "requests": requests, "tokenizer": tokenizer, "concurrency": concurrency,
    })


def run_lm_eval_job(python: str, folder: Path, request: dict) -> dict:
    job = folder / "lm_eval_requests.json"
    out = folder / "lm_eval_results.json"
    job.write_text(json.dumps(request))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # lm-eval's venv alone
    # The task's json data set is read from our file; nothing is fetched, the cache stays in the work folder.
    env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_DATASETS_CACHE=str(folder / "hf-datasets"))
    done = subprocess.run(
        [python, str(Path(__file__).resolve()), "--worker", str(job), str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise SetupError(f"lm-eval worker ({python}) exited {done.returncode}: {done.stderr.strip()[-600:]}")
    return json.loads(out.read_text())


def _fmt(tokens) -> str:
    return json.dumps(list(tokens or []), ensure_ascii=False)


def compare(
    families: list[str], examples: list, w2c: dict, requests: list[dict], lm: list[dict], show: int, tolerance: float = TOLERANCE
) -> int:
    from w2c_tui.labels import LABELS

    differing_total = compared_total = ids_differ_total = 0
    print()
    print(f"| family | choices | boundary merges | same prompt ids | max abs delta | differ > {tolerance:g} | same argmax |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    details: list[str] = []
    for family in families:
        deltas, merges, differ, same_ids, id_rows = [], 0, [], 0, 0
        ours_by: dict[str, dict[str, float]] = {}
        theirs_by: dict[str, dict[str, float]] = {}
        for request, result in zip(requests, lm):
            if request["family"] != family:
                continue
            row = w2c[family].get((request["uuid"], request["label"]))
            if row is None:
                raise SetupError(f"w2c-tui wrote no debug row for {family} {request['uuid']} {request['label']}")
            merges += result["merged"]
            if row["_sent_ids"]:  # w2c-tui sent token ids: were they lm-eval's?
                id_rows += 1
                same_ids += result["prompt_ids"] in row["_sent_ids"]
            ours, theirs = row.get("raw_score"), result["loglikelihood"]
            ours = -math.inf if ours is None else ours
            delta = 0.0 if ours == theirs else abs(ours - theirs)
            deltas.append(delta)
            ours_by.setdefault(request["uuid"], {})[request["label"]] = ours
            theirs_by.setdefault(request["uuid"], {})[request["label"]] = theirs
            if not delta <= tolerance:
                differ.append((request, result, row, ours, theirs, delta))
        compared_total += len(deltas)
        differing_total += len(differ)
        ids_differ_total += id_rows - same_ids
        ids = f"{same_ids}/{id_rows}" if id_rows else "n/a (text)"
        # lm-eval's acc takes the first of equal maxima, as max() does over LABELS order.
        argmax = sum(max(LABELS, key=ours_by[u].get) == max(LABELS, key=theirs_by[u].get) for u in ours_by)
        print(
            f"| {family} | {len(deltas)} | {merges} | {ids} | {max(deltas, default=0.0):.3g} | {len(differ)} "
            f"| {argmax}/{len(ours_by)} |"
        )
        for request, result, row, ours, theirs, delta in differ[:show]:
            details.append(
                f"  {family} {request['uuid'][:8]} {request['label']}: w2c {ours:.6f} lm-eval {theirs:.6f} (delta {delta:.4g})\n"
                f"    lm-eval: context ends {_fmt(result['context_tail'])}, continuation starts {_fmt(result['continuation_head'])};"
                f" whole at the boundary {_fmt(result['whole_at_boundary'])}\n"
                f"    w2c-tui: context ends {_fmt(row.get('context_tail_tokens'))}, continuation starts "
                f"{_fmt([t[0] for t in (row.get('continuation_tokens') or [])[:TAIL]])}; split={row.get('split')}"
                f" used_lcp={row.get('used_lcp_split')} tokens w2c {row.get('num_tokens')} lm-eval {result['n_continuation_tokens']}"
            )
        if len(differ) > show:
            details.append(f"  {family}: {len(differ) - show} more (--show to list them)")
    print()
    uuids = [e.uuid for e in examples]
    print(f"{len(uuids)} examples: {', '.join(uuids[:10])}{' ...' if len(uuids) > 10 else ''} (choices {', '.join(LABELS)})")
    if details:
        print("choices that differ, with the tokens at the context/continuation boundary:")
        print("\n".join(details))
    print(
        f"\nTOTAL: {compared_total} choices compared, {differing_total} differ by more than {tolerance:g};"
        f" {ids_differ_total} sent other token ids than lm-eval"
    )
    # The sim scores a token from the 64 characters before it, so equal scores alone cannot
    # show that the start of the context (BOS) was the same: the token ids can.
    return differing_total + ids_differ_total


OFFICIAL_TASKS = Path("/work/shared/when2call/official-task")  # NVIDIA's task files (--task-dir)


def w2c_official_block(folder: Path, family: str) -> dict:
    """The `official` block of w2c-tui's metrics.json for the family's session."""
    found = sorted((folder / "workdir" / "runs" / f"parity-{family}" / "sessions").glob("*/artifacts_local/mcq_logprob/metrics.json"))
    if len(found) != 1:
        raise SetupError(f"{family}: {len(found)} metrics.json files for its session")
    block = json.loads(found[0].read_text()).get("official")
    if not block:
        raise SetupError(f"{found[0]}: no official block (is {family} an official format?)")
    return block


def compare_official(families: list[str], examples: list, w2c: dict, blocks: dict, lm: dict, tolerance: float) -> int:
    """Per format: the pairs sent, every log-likelihood, and the four figures, w2c-tui's beside lm-eval's."""
    from w2c_tui.labels import LABELS
    from w2c_tui.prompts.official import official_pair

    by_uuid = {e.uuid: e for e in examples}
    print()
    print(f"| format | examples | same pairs | boundary merges | max abs delta | differ > {tolerance:g} | acc | acc_norm "
          "| macro_f1 | tool halluc. |")
    print("|---|---:|---:|---:|---:|---:|---|---|---|---|")
    problems = 0
    for family in families:
        theirs, ours = lm[family], blocks[family]
        same_pairs, deltas, merges = 0, [], 0
        for sample in theirs["samples"]:
            context, choices = official_pair(by_uuid[sample["uuid"]], family)
            same_pairs += sample["pairs"] == [[context, choice] for choice in choices]
            for label, ll in zip(LABELS, sample["loglikelihoods"]):
                row = w2c[family][(sample["uuid"], label)]
                score, merges = row.get("raw_score"), merges + bool(row.get("boundary_merge"))
                deltas.append(abs((-math.inf if score is None else score) - ll))
        rate = ours.get("tool_hallucination_rate") or {}
        # additional_metrics.py says 0.0 where no example is eligible; ours says null (nothing measured)
        our_rate = rate.get("rate") if rate.get("denominator") else 0.0
        cells, differ = [], 0
        for name, mine, other in (
            ("acc", ours.get("acc"), theirs["acc"]),
            ("acc_norm", ours.get("acc_norm"), theirs["acc_norm"]),
            ("macro_f1", ours.get("macro_f1"), theirs["macro_f1"]),
            ("tool", our_rate, theirs["tool_hallucination_rate"]),
        ):
            equal = mine is not None and abs(mine - other) <= 1e-12
            differ += not equal
            cells.append(f"{mine:.4f} / {other:.4f}{'' if equal else ' DIFFER'}" if mine is not None else f"– / {other:.4f} DIFFER")
        far = sum(not d <= tolerance for d in deltas)
        n = len(theirs["samples"])
        problems += far + differ + (n - same_pairs) + (n != len(examples))
        print(f"| {family} | {n} | {same_pairs}/{n} | {merges} | {max(deltas, default=0.0):.3g} | {far} | " + " | ".join(cells) + " |")
    print("\n(figures: w2c-tui's official block / lm-eval on NVIDIA's task; tool halluc. out of "
          f"{rate.get('denominator')} examples in the last format)")
    return problems


def run_official(args, server, folder: Path, model: str, tolerance: float) -> int:
    """--official: w2c-tui in each official format against lm-eval running NVIDIA's task files, one server."""
    from w2c_tui.prompts.official import FORMATS

    families = args.families or list(FORMATS)
    unknown = [f for f in families if f not in FORMATS]
    if unknown:
        raise SetupError(f"--official: {unknown[0]!r} is no official format; valid: {', '.join(FORMATS)}")
    task_dir = Path(args.task_dir)
    if not (task_dir / "utils.py").exists():
        raise SetupError(f"{task_dir}: no utils.py; --task-dir names the folder of NVIDIA's task files")
    examples = shortest_examples(args.examples)
    data = write_dataset(folder, {e.uuid for e in examples})
    w2c, blocks = {}, {}
    for family in families:
        w2c[family], seconds = run_w2c(folder, server.root, family, data, model, args.concurrency)
        blocks[family] = w2c_official_block(folder, family)
        print(f"w2c-tui run {family}: {len(w2c[family])} debug rows in {seconds:.1f}s")
    job = {
        "official": True, "root": server.root, "model": model, "seed": API_SEED, "tokenizer": args.tokenizer,
        "concurrency": 1, "task_dir": str(task_dir.resolve()), "data": str(data), "tasks": families, "work": str(folder),
    }
    answer = run_lm_eval_job(args.lm_eval_python, folder, job)
    if answer["lm_eval_version"] != LM_EVAL_VERSION:
        raise SetupError(f"lm-eval {answer['lm_eval_version']} in {args.lm_eval_python}; this check pins {LM_EVAL_VERSION}")
    print(f"lm-eval {answer['lm_eval_version']} simple_evaluate on NVIDIA's tasks: {len(families)} tasks in {answer['seconds']:.1f}s")
    return compare_official(families, examples, w2c, blocks, answer["tasks"], tolerance)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lm-eval-python", default="/work/lmeval-venv/bin/python", help="python of the lm-eval virtualenv")
    parser.add_argument("--examples", type=int, default=5, help="examples per family (4 choices each)")
    parser.add_argument("--pool", type=int, default=40, help="shortest examples considered when choosing")
    parser.add_argument("--families", nargs="+", default=None, help="template families (default: all seven)")
    parser.add_argument("--bos", choices=("auto", "yes", "no"), default="auto",
                        help="family BOS text in lm-eval's contexts (auto: as the pipeline did, from its split)")
    parser.add_argument("--show", type=int, default=5, help="differing choices listed per family")
    parser.add_argument("--merging-tokenizer", action="store_true", help="sim tokenizer that merges :{\" and the like")
    parser.add_argument("--sim-arg", action="append", default=[], help="extra argument for `w2c-tui sim` (repeatable)")
    parser.add_argument("--src", metavar="DIR", help="w2c-tui source tree to check (default: the installed one), e.g. a `git archive` export")
    parser.add_argument("--keep", metavar="DIR", help="keep the work folder here (default: a temporary one)")
    parser.add_argument("--server", metavar="URL", help="a real server's root (http://host:port) instead of the sim")
    parser.add_argument("--tokenizer", metavar="DIR", help="with --server: the Hugging Face tokenizer files the server loads")
    parser.add_argument("--model", help="with --server: the served model name (default: the first GET /v1/models lists)")
    parser.add_argument("--tolerance", type=float, help="largest |score difference| counted equal (default 1e-9, 1e-3 with --server)")
    parser.add_argument("--concurrency", type=int, default=4, help="w2c-tui's max_concurrency (lm-eval sends one request at a time)")
    parser.add_argument("--official", action="store_true",
                        help="compare the official formats with lm-eval running NVIDIA's task files (their process_docs, our data)")
    parser.add_argument("--task-dir", default=str(OFFICIAL_TASKS), help="with --official: the folder of NVIDIA's task files")
    parser.add_argument("--worker", nargs=2, metavar=("REQUESTS", "RESULTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return 0

    if args.src:  # this process and every w2c-tui process it starts use that tree
        src = str(Path(args.src).resolve())
        sys.path.insert(0, src)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    import httpx

    import w2c_tui
    from w2c_tui.labels import LABELS
    from w2c_tui.prompts.families import FAMILIES
    from w2c_tui.prompts.mcq_logprob import build_loglik_requests

    if bool(args.server) != bool(args.tokenizer):
        raise SetupError("--server and --tokenizer go together (the server's root URL and its tokenizer folder)")
    model = MODEL
    if args.server:
        model = args.model or first_model(args.server)
    tolerance = args.tolerance if args.tolerance is not None else (1e-3 if args.server else TOLERANCE)
    if args.server and not args.official:
        from w2c_tui.prompts.families import detect_family

        args.families = args.families or [detect_family(model)]
    families = args.families or list(FAMILIES)
    unknown = [f for f in families if f not in FAMILIES] if not args.official else []
    if unknown:
        raise SetupError(f"unknown family {unknown[0]!r}; valid: {', '.join(FAMILIES)}")
    if not Path(args.lm_eval_python).exists():
        raise SetupError(
            f"{args.lm_eval_python} not found: create the lm-eval virtualenv (benchmarks/README.md, 'lm-eval parity')"
        )
    if args.keep and Path(args.keep).exists() and any(Path(args.keep).iterdir()):
        # A session left there would be resumed, not re-run against this sim.
        raise SetupError(f"--keep {args.keep}: folder is not empty; name a new one")
    sim = RealServer(args.server) if args.server else Sim(args.sim_arg, args.merging_tokenizer)
    folder = Path(args.keep or tempfile.mkdtemp(prefix="lm_eval_parity-")).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        print(f"w2c-tui from {Path(w2c_tui.__file__).parent}")
        if args.official:
            print(f"{'server' if args.server else 'sim'} {sim.root}, model {model}; work folder {folder}")
            return 1 if run_official(args, sim, folder, model, tolerance) else 0
        if args.server:
            print(f"server {sim.root}, model {model}, tokenizer {args.tokenizer}; work folder {folder}")
            examples = shortest_examples(args.examples)
        else:
            print(f"sim {sim.root} (seed {SIM_SEED}, tokenizer {'merging (patched)' if args.merging_tokenizer else 'as shipped'}"
                  f"{', args ' + ' '.join(args.sim_arg) if args.sim_arg else ''}); work folder {folder}")
            with httpx.Client(timeout=60) as client:
                started = time.monotonic()
                examples = choose_examples(client, sim.root, families, args.examples, args.pool)
                print(f"chose {len(examples)} examples in {time.monotonic() - started:.1f}s")
        data = write_dataset(folder, {e.uuid for e in examples})
        w2c = {}
        for family in families:
            w2c[family], seconds = run_w2c(folder, sim.root, family, data, model, args.concurrency)
            print(f"w2c-tui run {family}: {len(w2c[family])} debug rows in {seconds:.1f}s")
        requests = []
        for family in families:
            # The pipeline puts the family's BOS text into token-id prompts only (a server adds its own to text).
            splits = {row.get("split") for row in w2c[family].values()}
            bos = {"auto": splits == {"lm_eval_token_ids"}, "yes": True, "no": False}[args.bos]
            print(f"{family}: w2c-tui split {', '.join(map(str, sorted(splits, key=str)))}; lm-eval contexts with bos={bos}")
            for example in sorted(examples, key=lambda e: e.uuid):
                context, continuations = build_loglik_requests(example, family, "", bos=bos)
                for label, continuation in zip(LABELS, continuations):  # build_loglik_requests' order
                    requests.append(
                        {"family": family, "uuid": example.uuid, "label": label, "context": context, "continuation": continuation}
                    )
        answer = run_lm_eval(args.lm_eval_python, folder, sim.root, requests, model=model, tokenizer=args.tokenizer)
        if answer["lm_eval_version"] != LM_EVAL_VERSION:
            raise SetupError(f"lm-eval {answer['lm_eval_version']} in {args.lm_eval_python}; this check pins {LM_EVAL_VERSION}")
        print(f"lm-eval {answer['lm_eval_version']} local-completions: {len(requests)} loglikelihood requests in {answer['seconds']:.1f}s")
        differing = compare(families, examples, w2c, requests, answer["results"], args.show, tolerance)
    finally:
        sim.stop()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 1 if differing else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SetupError as exc:
        print(f"lm_eval_parity: {exc}", file=sys.stderr)
        sys.exit(2)
