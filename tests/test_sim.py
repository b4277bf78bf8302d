"""The simulated endpoint over real HTTP on loopback: routes, roles, determinism, logprobs."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
from collections import Counter

import httpx
import pytest

from w2c_tui.data.when2call import load_examples
from w2c_tui.labels import LABELS
from w2c_tui.prompts.markers import JUDGE_MARKER, MCQ_MARKER
from w2c_tui.sim import SimServer, SimSettings, token_logprob
from w2c_tui.sim.behaviour import intended_label, skill
from w2c_tui.sim.judge import classify, extract_response
from w2c_tui.sim.knowledge import find_example
from w2c_tui.sim.logprobs import preferred_label, score_pieces
from w2c_tui.sim.tokenizer import count_tokens, decode, encode, tokenize, tokenize_many

SEED = 11
EXAMPLES = load_examples()


@pytest.fixture(scope="module")
def sim():
    with SimServer(SimSettings(seed=SEED, judge_malformed_rate=0.0)) as server:
        yield server


@pytest.fixture
def client(sim):
    with httpx.Client(base_url=sim.base_url, timeout=10) as c:
        yield c


def root(sim) -> str:
    return sim.base_url.removesuffix("/v1")


def by_label(label: str):
    return next(e for e in EXAMPLES if e.correct_answer == label and e.tools)


def target_messages(example) -> list[dict]:
    tools = "\n".join(example.tools)
    return [
        {"role": "system", "content": f"You may call these functions:\n{tools}"},
        {"role": "user", "content": example.question},
    ]


def chat(client, messages, **extra) -> dict:
    response = client.post("/chat/completions", json={"model": "sim-small", "messages": messages, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def expected_logprob(seed: int, prefix: str, token: str, favoured: bool) -> float:
    """The documented formula, written out independently of the sim's code."""
    data = f"{seed}\x1f{prefix[-64:]}\x1f{token}".encode()
    u = int.from_bytes(hashlib.sha256(data).digest()[:8], "big") / 2**64
    return -0.05 - (0.5 if favoured else 5.95) * u


# --- tokenizer -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "hello", " hello world", "Tel: +1 (555) 0100-2233 ext. 12345678901", "naïve café — 東京\n\ttabs  ", "a" * 30],
)
def test_tokenizer_round_trips(text):
    assert "".join(tokenize(text)) == text
    assert decode(encode(text)) == text
    assert count_tokens(text) == len(tokenize(text))


def test_tokenizer_pieces_follow_the_documented_rules():
    assert tokenize(" hello, world!") == [" hello", ",", " world", "!"]
    assert tokenize(" internationalization") == [" interna", "tionaliz", "ation"]
    assert tokenize("internationalization") == ["internat", "ionaliza", "tion"]
    assert tokenize("1234567890 x") == ["12345678", "90", " x"]
    assert encode("same words") == encode("same words")


def test_tokenize_many_reuses_shared_heads_without_changing_pieces():
    rng = random.Random(3)
    alphabet = ["a", "b", "Z", " ", "1", "9", ",", "\n", "é", "東"]
    for _ in range(300):
        head = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        texts = [head + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12))) for _ in range(5)]
        assert tokenize_many(texts) == [tokenize(t) for t in texts]
    # Boundaries where a shared head's last word merges with what follows.
    texts = ["Answer: yes", "Answer: yesterday was", "Answer: yes", "Answer 12345678", "Answer 123456789"]
    assert tokenize_many(texts) == [tokenize(t) for t in texts]


def test_tokenize_and_detokenize_endpoints(sim):
    text = 'Find {"name": "get_weather"} for Zürich in 2025?\n'
    with httpx.Client(base_url=root(sim)) as c:
        a = c.post("/tokenize", json={"model": "sim-small", "prompt": text, "add_special_tokens": False}).json()
        b = c.post("/v1/tokenize", json={"model": "sim-small", "prompt": text}).json()
        assert a == b and a["count"] == len(a["tokens"]) == len(tokenize(text)) and a["max_model_len"] == 32768
        assert c.post("/detokenize", json={"tokens": a["tokens"]}).json() == {"prompt": text}
        assert c.post("/v1/detokenize", json={"tokens": a["tokens"]}).json() == {"prompt": text}
        bad = c.post("/detokenize", json={"tokens": [10**9]})
        assert bad.status_code == 400 and "unknown token id" in bad.json()["error"]["message"]


# --- plain routes ---------------------------------------------------------------------


def test_models_health_and_sim_header(sim, client):
    response = client.get("/models")
    assert response.headers["x-w2c-sim"] == "simulated"
    body = response.json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == list(SimSettings().models)
    assert all(m["object"] == "model" and m["owned_by"] == "w2c-tui-sim" for m in body["data"])
    health = httpx.get(root(sim) + "/health")
    assert health.status_code == 200 and health.headers["x-w2c-sim"] == "simulated"
    missing = client.get("/nowhere")
    assert missing.status_code == 404 and missing.headers["x-w2c-sim"] == "simulated"


def test_bad_requests_get_openai_style_errors(client):
    not_json = client.post("/chat/completions", content=b"{nope", headers={"content-type": "application/json"})
    assert not_json.status_code == 400 and "error" in not_json.json()
    no_messages = client.post("/chat/completions", json={"model": "m"})
    assert no_messages.status_code == 400 and "messages" in no_messages.json()["error"]["message"]
    bad_prompt = client.post("/completions", json={"model": "m", "prompt": [1.5]})
    assert bad_prompt.status_code == 400


def test_stats_count_requests_and_reset(sim, client):
    httpx.post(root(sim) + "/sim/reset")
    client.get("/models")
    chat(client, [{"role": "user", "content": "hi"}], temperature=0)
    stats = httpx.get(root(sim) + "/sim/stats").json()
    assert stats["requests"] == {"/v1/chat/completions": 1, "/v1/models": 1}
    assert stats["requests_total"] == 2 and stats["faults_total"] == 0
    assert set(stats["faults"]) >= {"429_seconds", "429_date", "429_ms", "500", "502", "503", "drop", "slow"}
    assert sim.stats() == stats
    reset = httpx.post(root(sim) + "/sim/reset").json()
    assert reset["requests_total"] == 0


# --- chat: the model under evaluation ---------------------------------------------------


def test_target_reply_shapes_and_usage(client):
    example = by_label("tool_call")
    messages = target_messages(example)
    body = chat(client, messages, model="llama-3.3-70b-instruct", temperature=0)
    assert body["model"] == "llama-3.3-70b-instruct"
    assert body["system_fingerprint"] == "w2c-tui-sim" and body["object"] == "chat.completion"
    message = body["choices"][0]["message"]
    assert message["role"] == "assistant" and "reasoning_content" not in message
    expected_prompt = sum(count_tokens(m["content"]) for m in messages)
    usage = body["usage"]
    assert usage["prompt_tokens"] == expected_prompt
    assert usage["completion_tokens"] == count_tokens(message["content"])
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_target_acts_out_the_intended_label(client):
    names = re.compile(r'"name"\s*:\s*"([^"]+)"')
    for example in EXAMPLES[:40]:
        messages = target_messages(example)
        content = chat(client, messages, temperature=0)["choices"][0]["message"]["content"]
        prompt = "\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\n"
        label = intended_label(
            seed=SEED,
            model="sim-small",
            prompt=prompt,
            example=example,
            has_tools=bool(example.tools),
            temperature=0,
            request_seed=None,
        )
        judged = classify(content)
        assert {"direct_answer": "direct"}.get(judged, judged) == label, content
        if label == "tool_call":
            call = json.loads(content.split("<tool_call>")[1].split("</tool_call>")[0])
            offered = names.findall("\n".join(example.tools)) or ["web_search"]
            assert call["name"] in offered and isinstance(call["arguments"], dict)


def test_skill_makes_models_mostly_right():
    for model in SimSettings().models:
        assert 0.6 <= skill(model) <= 0.85
    hits = sum(
        intended_label(
            seed=SEED, model="sim-small", prompt=e.question, example=e, has_tools=True, temperature=0, request_seed=None
        )
        == e.correct_answer
        for e in EXAMPLES
    )
    assert 0.5 * len(EXAMPLES) < hits < 0.95 * len(EXAMPLES)


def test_unknown_question_without_tools_is_declined(client):
    question = "What is the airspeed of a swallow carrying a coconut?"
    body = chat(client, [{"role": "user", "content": question}], temperature=0)
    assert classify(body["choices"][0]["message"]["content"]) == "cannot_answer"


def test_native_tools_come_back_as_tool_calls(client):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ]
    seen = set()
    for seed in range(40):
        body = chat(client, [{"role": "user", "content": f"Weather please, case {seed}"}], tools=tools, temperature=0)
        choice = body["choices"][0]
        if choice["finish_reason"] == "tool_calls":
            call = choice["message"]["tool_calls"][0]
            assert choice["message"]["content"] is None and call["type"] == "function"
            assert call["function"]["name"] == "get_weather"
            assert json.loads(call["function"]["arguments"]) == {"city": "example"}
        seen.add(choice["finish_reason"])
    assert seen == {"tool_calls", "stop"}


def test_reasoning_models_add_reasoning_content(client):
    body = chat(client, target_messages(by_label("cannot_answer")), model="gpt-oss-120b", reasoning_effort="high")
    reasoning = body["choices"][0]["message"]["reasoning_content"]
    assert "simulated" in reasoning
    assert body["usage"]["completion_tokens"] == count_tokens(body["choices"][0]["message"]["content"]) + count_tokens(
        reasoning
    )


def test_max_tokens_truncates(client):
    body = chat(client, target_messages(by_label("request_for_info")), temperature=0, max_tokens=3)
    choice = body["choices"][0]
    assert choice["finish_reason"] == "length" and len(tokenize(choice["message"]["content"])) == 3
    assert body["usage"]["completion_tokens"] == 3


def test_temperature_zero_is_deterministic_and_ignores_request_seed(client):
    messages = target_messages(by_label("request_for_info"))
    replies = {chat(client, messages, temperature=0, seed=s)["choices"][0]["message"]["content"] for s in range(6)}
    replies.add(chat(client, messages, temperature=0)["choices"][0]["message"]["content"])
    assert len(replies) == 1


def test_temperature_above_zero_varies_with_seed_and_repeats_per_seed(client):
    messages = target_messages(by_label("tool_call"))
    first = [chat(client, messages, temperature=1.0, seed=s)["choices"][0]["message"]["content"] for s in range(20)]
    again = [chat(client, messages, temperature=1.0, seed=s)["choices"][0]["message"]["content"] for s in range(20)]
    assert first == again
    assert len(set(first)) >= 2


def test_deviation_grows_with_temperature():
    example = by_label("cannot_answer")

    def changed(temperature: float) -> int:
        base = intended_label(
            seed=SEED, model="m", prompt="p", example=example, has_tools=True, temperature=0, request_seed=None
        )
        return sum(
            intended_label(
                seed=SEED,
                model="m",
                prompt="p",
                example=example,
                has_tools=True,
                temperature=temperature,
                request_seed=s,
            )
            != base
            for s in range(400)
        )

    assert changed(0.2) < changed(0.7) < changed(1.5)


# --- chat: judge and MCQ roles ----------------------------------------------------------


def judge_prompt(question: str, response: str) -> str:
    return (
        "You grade tool-use behaviour.\n"
        f"Question: {question}\n"
        'Tools: [{"name": "get_weather", "arguments": {}}]\n'
        "Response:\n"
        f"{response}\n"
        "---\n"
        "Label the response as direct_answer, tool_call, request_for_info or cannot_answer.\n"
        f'Reply with JSON only: {JUDGE_MARKER} "<label>"}}'
    )


def parse_judge(text: str) -> str:
    return json.loads(re.search(r"\{[^{}]*\}", text).group(0))["classification"]


@pytest.mark.parametrize(
    ("response", "label"),
    [
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>', "tool_call"),
        ("Which city do you mean?", "request_for_info"),
        ("I'm sorry, but I cannot do that with these tools.", "cannot_answer"),
        ("It is usually sunny there in July.", "direct_answer"),
    ],
)
def test_judge_role_classifies_the_response(client, response, label):
    body = chat(client, [{"role": "user", "content": judge_prompt("Weather in Oslo?", response)}], temperature=0)
    assert parse_judge(body["choices"][0]["message"]["content"]) == label


def test_judge_reply_styles_vary_but_parse(client):
    styles = set()
    for i in range(24):
        prompt = judge_prompt(f"Question number {i}?", "Which date should I use?")
        content = chat(client, [{"role": "user", "content": prompt}], temperature=0)["choices"][0]["message"]["content"]
        assert parse_judge(content) == "request_for_info"
        styles.add(("```" in content, content.lstrip().startswith("{")))
    assert len(styles) >= 3


def test_judge_reads_tagged_responses():
    tools = '{"name": "x", "arguments": {}}'
    text = f"Tools: {tools}\n<response>Could you tell me the date?</response>\n{JUDGE_MARKER}"
    assert extract_response(text) == "Could you tell me the date?"
    assert classify(extract_response(text)) == "request_for_info"


def mcq_prompt(example) -> str:
    options = "\n".join(f"{i}. {example.answers[label]}" for i, label in enumerate(LABELS))
    tools = "\n".join(example.tools)
    return f"Tools:\n{tools}\nQuestion: {example.question}\nOptions:\n{options}\n{MCQ_MARKER} (0-3)."


def test_mcq_role_answers_with_the_intended_option(client):
    # Questions that occur once, with tools: no ambiguity about which example is meant.
    counts = Counter(e.question.strip() for e in EXAMPLES)
    unique = [e for e in EXAMPLES if counts[e.question.strip()] == 1 and e.tools]
    for example in unique[:20]:
        messages = [{"role": "user", "content": mcq_prompt(example)}]
        content = chat(client, messages, temperature=0, max_tokens=1)["choices"][0]["message"]["content"]
        assert content in {"0", "1", "2", "3"}
        prompt = f"user: {messages[0]['content']}\n"
        label = intended_label(
            seed=SEED,
            model="sim-small",
            prompt=prompt,
            example=example,
            has_tools=True,
            temperature=0,
            request_seed=None,
        )
        assert int(content) == LABELS.index(label)
    roomy = [
        chat(client, [{"role": "user", "content": mcq_prompt(e)}], temperature=0)["choices"][0]["message"]["content"]
        for e in EXAMPLES[:30]
    ]
    assert all(re.search(r"[0-3]", r) for r in roomy) and any(not r.isdigit() for r in roomy)


# --- completions and log-probabilities ---------------------------------------------------


def check_logprobs(choice: dict, prompt: str, echoed: bool) -> None:
    lp = choice["logprobs"]
    tokens = lp["tokens"]
    assert "".join(tokens) == choice["text"]
    assert lp["text_offset"] == [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
    for i, (token, value, top) in enumerate(zip(tokens, lp["token_logprobs"], lp["top_logprobs"])):
        if echoed and i == 0:
            assert value is None and top is None
            continue
        before = choice["text"][: lp["text_offset"][i]] if echoed else prompt + choice["text"][: lp["text_offset"][i]]
        assert value == token_logprob(SEED, before, token)
        assert value in (expected_logprob(SEED, before, token, False), expected_logprob(SEED, before, token, True))
        assert -6.0 <= value <= -0.05
        assert top == own_and_alternative(token, value)


def own_and_alternative(token: str, value: float) -> dict[str, float]:
    """vLLM's top_logprobs at `logprobs: 1`: the token's own first, then the most likely token
    when that is another; the sim's other token takes the rest of the probability."""
    if value >= -math.log(2):
        return {token: value}
    return {token: value, " a" if token == " the" else " the": math.log1p(-math.exp(value))}


def test_logprobs_zero_lists_each_token_alone_and_one_adds_the_likelier_token(client):
    prompt = "The capital of France is Paris, and the capital of Italy is Rome."
    answers = {
        k: client.post("/completions", json={"prompt": prompt, "echo": True, "logprobs": k, "max_tokens": 3, "temperature": 0}).json()["choices"][0]["logprobs"]
        for k in (0, 1, 5)
    }
    assert answers[0]["tokens"] == answers[1]["tokens"] and answers[0]["token_logprobs"] == answers[1]["token_logprobs"]
    entries = list(zip(answers[0]["tokens"], answers[0]["token_logprobs"]))[1:]
    assert answers[0]["top_logprobs"][1:] == [{t: v} for t, v in entries]
    assert answers[1]["top_logprobs"][1:] == [own_and_alternative(t, v) for t, v in entries] == answers[5]["top_logprobs"][1:]
    assert 0 < sum(len(top) == 2 for top in answers[1]["top_logprobs"][1:]) < len(entries)


def test_completions_echo_string_prompt(client):
    prompt = "The capital of France is"
    body = client.post(
        "/completions", json={"model": "m", "prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1}
    ).json()
    assert body["object"] == "text_completion" and body["system_fingerprint"] == "w2c-tui-sim"
    choice = body["choices"][0]
    assert choice["index"] == 0 and choice["text"].startswith(prompt)
    assert choice["logprobs"]["tokens"][: len(tokenize(prompt))] == tokenize(prompt)
    assert len(choice["logprobs"]["tokens"]) == len(tokenize(prompt)) + 1
    check_logprobs(choice, prompt, echoed=True)
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}


def test_completions_echo_list_prompts_and_zero_max_tokens(client):
    # Shared heads (scored once by the sim) that split differently where the prompts part.
    prompts = ["Answer: yes", "Answer: no, because", "x", "Answer: yesterday", "Answer: yes"]
    body = client.post(
        "/completions", json={"model": "m", "prompt": prompts, "echo": True, "logprobs": 1, "max_tokens": 0}
    ).json()
    assert [c["index"] for c in body["choices"]] == [0, 1, 2, 3, 4]
    for prompt, choice in zip(prompts, body["choices"]):
        assert choice["text"] == prompt and choice["logprobs"]["tokens"] == tokenize(prompt)
        check_logprobs(choice, prompt, echoed=True)
    assert body["usage"]["completion_tokens"] == 0


def test_completions_token_id_prompts(sim, client):
    texts = ["Hello there, friend", " and more text"]
    ids = [httpx.post(root(sim) + "/tokenize", json={"prompt": t}).json()["tokens"] for t in texts]
    single = client.post("/completions", json={"prompt": ids[0], "echo": True, "logprobs": 1, "max_tokens": 0}).json()
    assert single["choices"][0]["text"] == texts[0]
    check_logprobs(single["choices"][0], texts[0], echoed=True)
    both = client.post("/completions", json={"prompt": ids, "echo": True, "logprobs": 1, "max_tokens": 2}).json()
    for text, choice in zip(texts, both["choices"]):
        assert choice["text"].startswith(text) and len(choice["logprobs"]["tokens"]) == len(tokenize(text)) + 2
        check_logprobs(choice, text, echoed=True)
    unknown = client.post("/completions", json={"prompt": [10**9], "echo": True, "max_tokens": 0})
    assert unknown.status_code == 400


def test_completions_without_echo_score_generated_tokens_after_the_prompt(client):
    prompt = "Q: can you book a table?\nA:"
    body = client.post("/completions", json={"prompt": prompt, "logprobs": 1, "max_tokens": 5, "temperature": 0}).json()
    choice = body["choices"][0]
    assert not choice["text"].startswith(prompt) and len(choice["logprobs"]["tokens"]) == 5
    assert choice["finish_reason"] == "length"
    check_logprobs(choice, prompt, echoed=False)
    plain = client.post("/completions", json={"prompt": prompt, "max_tokens": 5, "temperature": 0}).json()
    assert plain["choices"][0]["logprobs"] is None and plain["choices"][0]["text"] == choice["text"]


def test_logprob_formula_is_exact_and_prefers_one_answer():
    assert token_logprob(3, "abc", " d") == expected_logprob(3, "abc", " d", False)
    assert token_logprob(3, "x" * 500 + "abc", " d") == token_logprob(3, "y" + "x" * 499 + "abc", " d")
    agree = 0
    for example in EXAMPLES:
        context = f"Question: {example.question}\nAnswer:"
        sums = {
            label: sum(score_pieces(SEED, tokenize(example.answers[label]), start=context)) for label in LABELS
        }
        agree += max(sums, key=sums.get) == preferred_label(SEED, example.uuid, example.correct_answer)
    assert agree > 0.6 * len(EXAMPLES)


def test_known_questions_are_found_inside_longer_prompts():
    example = EXAMPLES[17]
    assert find_example(f"Some preamble\nQuestion: {example.question}\nMore text") == example
    assert find_example(f"inline {example.question} inline") == example
    assert find_example("nothing known here") is None


def test_a_repeated_question_is_resolved_by_the_tools_offered():
    counts = Counter(e.question.strip() for e in EXAMPLES)
    question = next(q for q, n in counts.items() if n > 1)
    for example in (e for e in EXAMPLES if e.question.strip() == question):
        names = [json.loads(t)["name"] for t in example.tools]
        assert find_example(question, names) == example


def test_streaming_is_refused_clearly(client):
    response = client.post("/chat/completions", json={"messages": [{"role": "user", "content": "x"}], "stream": True})
    assert response.status_code == 400 and "stream" in response.json()["error"]["message"]


# --- serving ---------------------------------------------------------------------------


async def test_many_concurrent_requests_through_the_async_context_manager():
    async with SimServer(latency_ms=20, jitter_ms=10, seed=SEED) as server:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(base_url=server.base_url, limits=limits, timeout=30) as c:
            body = {"model": "sim-small", "messages": [{"role": "user", "content": "hello"}], "temperature": 0}
            responses = await asyncio.gather(*(c.post("/chat/completions", json=body) for _ in range(200)))
        assert all(r.status_code == 200 for r in responses)
        assert server.stats()["requests"]["/v1/chat/completions"] == 200


def test_servers_get_distinct_free_ports_and_stop():
    with SimServer() as a, SimServer() as b:
        assert a.base_url != b.base_url and a.base_url.endswith("/v1")
        assert httpx.get(a.base_url + "/models").status_code == 200
    with pytest.raises(httpx.TransportError):
        httpx.get(a.base_url + "/models", timeout=2)


def test_the_sims_socket_takes_connections_before_uvicorn_runs():
    """`w2c-tui sim` prints its URL once bound: a client connecting at once must wait, not be refused."""
    import socket

    from w2c_tui.sim.server import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    try:
        with socket.create_connection(sock.getsockname(), timeout=5):
            pass  # accepted into the backlog, nobody serving yet
    finally:
        sock.close()
