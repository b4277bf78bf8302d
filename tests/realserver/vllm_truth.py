"""The model's own log-likelihoods, computed in-process by transformers from the weights vLLM serves.

Runs in the vLLM venv (the project venv has no torch), as a subprocess of the tests:

    .cache/vllm-venv/bin/python tests/realserver/vllm_truth.py MODEL_DIR < pairs.json > scores.json

stdin: [[context_ids, continuation_ids], ...]; stdout: [{"loglik", "greedy", "token_logprobs"}, ...]
where loglik = sum over j of log P(continuation[j] | context + continuation[:j]) and greedy
says whether every continuation token is the argmax at its position (lm-eval's is_greedy).
One forward pass per pair, fp32, on the CPU.
"""

from __future__ import annotations

import json
import sys


def score(model_dir: str, pairs: list[list[list[int]]]) -> list[dict]:
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(2)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    out = []
    with torch.inference_mode():
        for context, continuation in pairs:
            if not context or not continuation:
                raise SystemExit("each pair needs a non-empty context and continuation")
            ids = torch.tensor([context + continuation])
            logits = model(ids).logits[0].double()
            # Row i predicts token i+1: continuation token j is read from row len(context)-1+j.
            rows = torch.log_softmax(logits[len(context) - 1 : len(context) + len(continuation) - 1], dim=-1)
            wanted = torch.tensor(continuation)
            values = rows[torch.arange(len(continuation)), wanted]
            out.append(
                {
                    "loglik": float(values.sum()),
                    "greedy": bool((rows.argmax(dim=-1) == wanted).all()),
                    "token_logprobs": [float(v) for v in values],
                }
            )
    return out


if __name__ == "__main__":
    json.dump(score(sys.argv[1], json.load(sys.stdin)), sys.stdout)
