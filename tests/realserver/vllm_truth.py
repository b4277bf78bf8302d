"""The model's own log-likelihoods, computed in-process by transformers from the weights vLLM serves.

Runs in the vLLM venv (the project venv has no torch), as a subprocess of the tests:

    .cache/vllm-venv/bin/python tests/realserver/vllm_truth.py MODEL_DIR < pairs.json > scores.json

stdin: [[context_ids, continuation_ids], ...]; stdout: [{"loglik", "greedy", "token_logprobs"}, ...]
where loglik = sum over j of log P(continuation[j] | context + continuation[:j]) and greedy
says whether every continuation token is the argmax at its position (lm-eval's is_greedy).
fp32 on the CPU; a context is run once and its key/value cache reused by each continuation
that follows it (the four choices of an example), which is the same arithmetic as one
forward pass over context + continuation, four times cheaper.
"""

from __future__ import annotations

import json
import sys


def score(model_dir: str, pairs: list[list[list[int]]]) -> list[dict]:
    import copy

    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(2)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    out = []
    contexts: dict[tuple[int, ...], tuple] = {}  # the four choices of an example share one context pass
    with torch.inference_mode():
        for context, continuation in pairs:
            if not context or not continuation:
                raise SystemExit("each pair needs a non-empty context and continuation")
            key = tuple(context)
            if key not in contexts:
                first = model(torch.tensor([context]), use_cache=True)
                contexts = {key: (first.logits[0, -1:], first.past_key_values)}  # pairs come grouped by context
            last, past = contexts[key]
            rows = [last]
            if len(continuation) > 1:  # row i of this pass predicts continuation[i + 1]
                rest = model(torch.tensor([continuation[:-1]]), past_key_values=copy.deepcopy(past), use_cache=True)
                rows.append(rest.logits[0])
            logprobs = torch.log_softmax(torch.cat(rows).double(), dim=-1)
            wanted = torch.tensor(continuation)
            values = logprobs[torch.arange(len(continuation)), wanted]
            out.append(
                {
                    "loglik": float(values.sum()),
                    "greedy": bool((logprobs.argmax(dim=-1) == wanted).all()),
                    "token_logprobs": [float(v) for v in values],
                }
            )
    return out


if __name__ == "__main__":
    json.dump(score(sys.argv[1], json.load(sys.stdin)), sys.stdout)
