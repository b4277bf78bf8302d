"""Adaptive concurrency, token budgets and the sim's capacity mode (issue 15, items 1 and 2)."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest

from configs import write_config
from w2c_tui.api import ApiClient, ProviderSettings
from w2c_tui.api.adaptive import NEUTRAL, OK, OVERLOAD, OVERLOAD_COUNT, WINDOW, AdaptiveConcurrency, verdict_for
from w2c_tui.api.limits import Pacing, ProviderLimits
from w2c_tui.api.token_budget import TokenBudget, estimate_tokens
from w2c_tui.usage_values import answer_usage
from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.engine.pacing import PacingAudit, record_pacing
from w2c_tui.sim.capacity import CapacityGate
from w2c_tui.tui.widgets.request_stats import describe_requests


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def take(limiter: AdaptiveConcurrency, n: int) -> list[int]:
    return [await limiter.acquire() for _ in range(n)]


def refuse(limiter: AdaptiveConcurrency, tickets: list[int]):
    """Sustained refusals: OVERLOAD_COUNT 429s in a row (of `tickets`); the change the last one caused."""
    first, last = tickets[: OVERLOAD_COUNT - 1], tickets[OVERLOAD_COUNT - 1]
    assert [limiter.release(t, OVERLOAD) for t in first] == [None] * len(first)
    return limiter.release(last, OVERLOAD)


# The limiter


async def test_overloads_of_one_round_shrink_the_limit_once():
    limiter = AdaptiveConcurrency(ceiling=64, initial=32, clock=Clock())
    tickets = await take(limiter, 32)
    change = refuse(limiter, tickets[:OVERLOAD_COUNT])
    assert (change.old, change.new, change.reason) == (32, 16, "overload")
    # More refusals of requests sent before the decrease: nothing new, no change.
    assert all(limiter.release(t, OVERLOAD) is None for t in tickets[OVERLOAD_COUNT:31])
    assert limiter.limit == 16 and limiter.overloads == 31 and limiter.decreases == 1
    # Requests started after the decrease that are refused again: the next round, halved again.
    limiter.release(tickets[31], OK)
    late = await take(limiter, 5)
    assert refuse(limiter, late).new == 8


async def test_a_lone_refusal_timeouts_and_drops_change_nothing():
    limiter = AdaptiveConcurrency(ceiling=16, initial=16)
    for _ in range(200):  # every fourth answer a failure that says nothing about capacity
        limiter.release(await limiter.acquire(), NEUTRAL)
        for _ in range(3):
            limiter.release(await limiter.acquire(), OK)
    tickets = await take(limiter, 16)
    assert limiter.release(tickets[0], OVERLOAD) is None  # one 429 among successes: noise
    assert all(limiter.release(t, OK) is None for t in tickets[1:WINDOW])
    # One short of OVERLOAD_COUNT refusals in the window: still not sustained.
    short = tickets[WINDOW : WINDOW + OVERLOAD_COUNT - 1]
    assert [limiter.release(t, OVERLOAD) for t in short] == [None] * len(short)
    assert limiter.limit == 16 and limiter.decreases == 0 and limiter.overloads == OVERLOAD_COUNT


async def test_random_refusals_at_a_twenty_percent_fault_rate_never_shrink_the_limit():
    import random

    rng = random.Random(7)
    limiter = AdaptiveConcurrency(ceiling=16, initial=16)
    for _ in range(250):  # a run's worth of rounds at full concurrency, 8% of answers 429 or 503
        tickets = [await limiter.acquire() for _ in range(limiter.limit)]
        for t in tickets:
            limiter.release(t, OVERLOAD if rng.random() < 0.08 else OK)
    assert limiter.overloads > 250 and limiter.decreases == 0 and limiter.limit == 16


async def test_the_limit_never_falls_below_the_floor():
    limiter = AdaptiveConcurrency(ceiling=16, initial=4, floor=3)
    for _ in range(5):
        ticket = await limiter.acquire()
        limiter.release(ticket, OVERLOAD)
    assert limiter.limit == 3 and limiter.min_limit == 3 and limiter.decreases == 1


async def test_a_window_of_limit_many_successes_adds_one_up_to_the_ceiling():
    limiter = AdaptiveConcurrency(ceiling=5, initial=4)
    tickets = await take(limiter, 4)
    waiting = [asyncio.ensure_future(limiter.acquire()) for _ in range(5)]  # demand beyond the limit
    await asyncio.sleep(0)
    changes = [limiter.release(t, OK) for t in tickets[:3]]
    assert changes == [None, None, None] and limiter.limit == 4
    change = limiter.release(tickets[3], OK)  # the fourth success of a window of four
    assert (change.old, change.new, change.reason) == (4, 5, "successes")
    tickets = [await future for future in waiting]
    assert all(limiter.release(t, OK) is None for t in tickets)  # at the ceiling: no more growth
    assert limiter.limit == 5 and limiter.max_limit == 5 and limiter.in_flight == 0


async def test_successes_grow_nothing_while_the_limit_is_not_used():
    limiter = AdaptiveConcurrency(ceiling=64, initial=8)
    for _ in range(50):  # one request at a time: the limit of 8 is never tried
        limiter.release(await limiter.acquire(), OK)
    assert limiter.limit == 8 and limiter.increases == 0


async def test_after_a_decrease_it_grows_back_quickly_then_probes_slowly():
    limiter = AdaptiveConcurrency(ceiling=64, initial=20)
    tickets = await take(limiter, 20)
    extra = [asyncio.ensure_future(limiter.acquire()) for _ in range(40)]  # a full queue
    await asyncio.sleep(0)
    refuse(limiter, tickets[:5])  # 20 -> 10, quick target 18
    assert limiter.limit == 10
    for ticket in tickets[5:13]:  # the requests in flight succeed: one step per success
        limiter.release(ticket, OK)
    assert limiter.limit == 18
    for ticket in tickets[13:]:  # then one step per 8 * 18 successes
        limiter.release(ticket, OK)
    assert limiter.limit == 18
    for future in extra:
        future.cancel()


async def test_refused_again_below_the_quick_target_grows_back_one_step_per_window():
    limiter = AdaptiveConcurrency(ceiling=64, initial=24)
    tickets = await take(limiter, 24)
    queued = [asyncio.ensure_future(limiter.acquire()) for _ in range(40)]
    await asyncio.sleep(0)
    refuse(limiter, tickets[:5])  # 24 -> 12, quick target 21
    for ticket in tickets[5:14]:
        limiter.release(ticket, OK)
    assert limiter.limit == 21
    await asyncio.sleep(0)
    late = [f.result() for f in queued if f.done()][:5]
    refuse(limiter, late)  # refused at the quick target: it was too high
    assert limiter.limit == 10
    for ticket in tickets[14:24]:
        limiter.release(ticket, OK)
    assert limiter.limit == 10  # no quick growth this time
    for future in queued:
        future.cancel()


async def test_a_fixed_limit_counts_refusals_but_does_not_move():
    limiter = AdaptiveConcurrency(ceiling=128, initial=4, adaptive=False)
    assert limiter.limit == 128
    tickets = await take(limiter, 10)
    assert all(limiter.release(t, OVERLOAD) is None for t in tickets)
    assert limiter.limit == 128 and limiter.overloads == 10


async def test_waiting_callers_are_served_in_arrival_order_and_the_wait_is_timed():
    clock = Clock()
    limiter = AdaptiveConcurrency(ceiling=1, initial=1, clock=clock)
    first = await limiter.acquire()
    order = []

    async def wait(name):
        ticket = await limiter.acquire()
        order.append(name)
        limiter.release(ticket, NEUTRAL)

    tasks = [asyncio.create_task(wait(n)) for n in "abc"]
    await asyncio.sleep(0)
    tasks[1].cancel()  # b gives up while queued: it must not hold a place
    clock.now += 2.5
    limiter.release(first, NEUTRAL)
    await asyncio.gather(*tasks, return_exceptions=True)
    assert order == ["a", "c"] and limiter.in_flight == 0 and limiter.waiting == 0
    assert limiter.wait_seconds == pytest.approx(3 * 2.5)  # a, c and the cancelled b each waited 2.5 s


async def test_a_waiter_cancelled_just_before_a_place_frees_leaves_cleanly():
    limiter = AdaptiveConcurrency(ceiling=1, initial=1)
    first = await limiter.acquire()
    waiter = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    waiter.cancel()  # (a cancelled run) and, before it runs again, the place frees:
    limiter.release(first, OK)  # the queue drops the cancelled waiter itself
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limiter.in_flight == 0 and limiter.waiting == 0
    limiter.release(await limiter.acquire(), OK)


def test_which_answers_count_as_overload():
    assert verdict_for(429, False) == verdict_for(503, False) == verdict_for(529, False) == OVERLOAD
    assert verdict_for(500, False) == verdict_for(None, False) == NEUTRAL
    assert verdict_for(200, True) == OK


def test_bad_limiter_settings_are_refused():
    with pytest.raises(ValueError):
        AdaptiveConcurrency(ceiling=4, floor=5)
    with pytest.raises(ValueError):
        AdaptiveConcurrency(ceiling=4, decrease_factor=1.0)


# Token budgets


async def test_reservations_wait_for_the_budget_in_call_order():
    clock, slept = Clock(), []

    async def sleep(seconds):
        slept.append(seconds)

    budget = TokenBudget(6000, sleep=sleep, clock=clock)  # 100 tokens a second, one second held
    assert await budget.wait_for(60) == 0.0  # 40 left
    assert await budget.wait_for(90) == pytest.approx(0.5)  # 50 short: half a second
    assert await budget.wait_for(100) == pytest.approx(1.5)  # behind the one before
    clock.now += 10  # a quiet spell refills the bucket, never beyond one second's worth
    assert budget.level() == pytest.approx(100)
    assert slept == [pytest.approx(0.5), pytest.approx(1.5)]


def test_the_reservation_is_corrected_from_usage_and_the_ratio_learned():
    clock = Clock()
    budget = TokenBudget(6000, clock=clock)
    budget.reserve(80)  # 20 left
    budget.settle(80, 30)  # it used 30: 50 refunded
    assert budget.level() == pytest.approx(70) and budget.corrected_total == -50
    budget.settle(10, 110)  # an answer that used more: the difference is charged
    assert budget.level() == pytest.approx(-30)
    assert budget.reserve(0) == pytest.approx(0.3)  # the next caller waits for that debt
    budget.learn(100, 250)  # the server counts 2.5 tokens per estimated token
    assert budget.scale == 2.5 and budget.scaled(40) == 100
    budget.learn(100, 150)
    assert budget.scale == pytest.approx(0.8 * 2.5 + 0.2 * 1.5)


def test_token_estimates_and_usage():
    chat = {"messages": [{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 9}], "max_tokens": 8}
    assert estimate_tokens(chat) == 10 + 3 + 8
    assert estimate_tokens({"prompt": ["a" * 8, [1, 2, 3]], "max_tokens": 1}) == 2 + 3 + 2
    assert estimate_tokens({"prompt": [5, 6, 7, 8]}) == 4
    assert answer_usage({"usage": {"prompt_tokens": 12, "completion_tokens": 3}}).total == 15
    assert answer_usage({"usage": None}).total is None and answer_usage([]).total is None


async def test_a_slot_reserves_tokens_and_settles_them_from_the_answer():
    clock, slept = Clock(), []

    async def sleep(seconds):
        slept.append(seconds)
        clock.now += seconds

    limits = ProviderLimits(4, sleep=sleep, clock=clock, pacing=Pacing(tokens_per_minute=6000))
    async with limits.slot(150) as slot:  # 50 over the bucket: half a second
        slot.finish(200, True, 40)
    assert slept == [pytest.approx(0.5)] and slot.budget_wait == pytest.approx(0.5)
    assert limits.tokens.level() == pytest.approx(100)  # the debt was paid by the wait, 110 refunded (up to the cap)
    assert limits.tokens.scale == pytest.approx(40 / 150)
    async with limits.slot(150) as refused:
        assert refused.reserved == 40 and limits.tokens.level() == pytest.approx(60)  # the learned ratio
        refused.finish(429, False, None)  # a refusal cost nothing: all refunded
    assert limits.tokens.level() == pytest.approx(100)
    assert limits.concurrency.overloads == 1


# The sim's capacity mode


def test_capacity_gate_caps_in_flight_requests_and_tokens():
    clock = Clock()
    gate = CapacityGate(in_flight=2, latency_ms=200, clock=clock)
    assert gate.admit() is None and gate.admit() is None
    refusal = gate.admit()
    assert refusal.cap == "in_flight" and refusal.retry_after_seconds == pytest.approx(0.2)
    gate.leave()
    assert gate.admit() is None
    rpm = CapacityGate(per_minute=120, clock=clock)  # 2 a second, two at once
    assert rpm.admit() is None and rpm.admit() is None
    refusal = rpm.admit()
    assert refusal.cap == "requests_per_minute" and refusal.retry_after_seconds == pytest.approx(0.5)
    clock.now += 0.5
    assert rpm.admit() is None
    tpm = CapacityGate(tokens_per_minute=6000, clock=clock)  # 100 a second
    assert tpm.admit() is None
    tpm.charge(250)  # admitted while not empty; now 150 in debt
    assert tpm.admit().retry_after_seconds == pytest.approx(1.51)


async def test_the_sim_answers_429_with_retry_after_beyond_its_in_flight_capacity(make_sim):
    sim = make_sim("--latency-ms", "400", "--capacity-in-flight", "2")
    body = {"model": "sim-small", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    async with httpx.AsyncClient(timeout=10) as http:
        answers = await asyncio.gather(*(http.post(f"{sim.base_url}/chat/completions", json=body) for _ in range(5)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200, 200, 429, 429, 429]
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.headers["retry-after-ms"] == "400" and refused.headers["retry-after"] == "1"
    assert "capacity" in refused.json()["error"]["message"]
    assert sim.stats()["capacity_refusals"] == {"in_flight": 3}


def test_the_sim_refuses_bad_capacity_flags(make_sim):
    with pytest.raises(RuntimeError, match="capacity_rpm must not be negative"):
        make_sim("--capacity-rpm", "-1")


# End to end


async def test_the_client_adapts_to_the_sims_capacity(make_sim):
    sim = make_sim("--latency-ms", "100", "--capacity-in-flight", "4")
    providers = [ProviderSettings("sim", sim.base_url, max_concurrency=32, initial_concurrency=8)]
    async with ApiClient(providers) as client:
        messages = [{"role": "user", "content": "hello"}]
        await asyncio.gather(*(client.chat("sim-small", messages, max_tokens=4) for _ in range(120)))
        pacing = client.pacing()["sim"]
    refused = sim.stats()["capacity_refusals_total"]
    assert pacing["overloads"] == refused and pacing["requests"] == 120 + refused
    # A fixed 32 gets most of its requests refused. Starting at twice the capacity costs a few
    # refusals per decrease (OVERLOAD_COUNT of the last WINDOW answers: one is noise), so
    # a run this short refuses more than a long one does (benchmarks/capacity.py: ~2%).
    assert refused <= 0.25 * (120 + refused)
    assert pacing["min_limit"] < 8 and pacing["limit"] <= 6


def test_a_launch_against_the_capacity_sim_records_its_pacing(make_sim, tmp_path):
    sim = make_sim("--latency-ms", "50", "--capacity-in-flight", "3")
    body = (
        "initial_concurrency = 4\n[data]\nn_per_label = 8\n[pipelines]\ndo_llm_judge = false\ndo_mcq_logprob = false\n"
        "[mlflow]\nenabled = false\n"
    )
    config = write_config(tmp_path, sim.base_url, body, concurrency=24)
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="pacing").run())
    assert outcome.ok
    snap = outcome.state.snapshot()
    pacing = snap["pacing"]["sim"]
    # The first round (4 at once) is one too many: OVERLOAD_COUNT refusals in WINDOW answers say
    # so (one would be noise); after that the limit stays at or under 3.
    assert pacing["ceiling"] == 24 and OVERLOAD_COUNT <= pacing["overloads"] <= OVERLOAD_COUNT + 3
    assert pacing["min_limit"] < 4
    session = tmp_path / "workdir" / "runs" / "pacing"
    metrics = json.loads(next(session.rglob("metrics.json")).read_text())
    assert metrics["pacing"]["sim"]["overloads"] == pacing["overloads"]
    events = [json.loads(line) for line in next(session.rglob("audit_fallbacks.jsonl")).read_text().splitlines()]
    kinds = [e["fallback_type"] for e in events]
    assert kinds.count("pacing_summary") == 1 and kinds.count("concurrency_limit_changed") == 1  # the first decrease
    changed = next(e for e in events if e["fallback_type"] == "concurrency_limit_changed")
    assert changed["details"]["to"] < changed["details"]["from"] and changed["details"]["reason"] == "overload"
    text = describe_requests(snap)
    assert f"sim limit [b]{pacing['limit']}[/b]/24 (" in text


# The audit and the Monitor


def test_limit_changes_are_audited_at_most_once_a_minute_per_provider():
    clock, events = Clock(), []

    class Audit:
        def emit(self, kind, **fields):
            events.append((kind, fields["details"]))

    audit = PacingAudit(clock=clock)
    audit.on_change(Audit(), "jrc", {"from": 16, "to": 17, "reason": "successes", "ceiling": 64})  # growth: kept
    audit.on_change(Audit(), "jrc", {"from": 17, "to": 8, "reason": "overload", "ceiling": 64})  # first decrease: at once
    for step in range(8, 15):
        clock.now += 1
        audit.on_change(Audit(), "jrc", {"from": step, "to": step + 1, "reason": "successes", "ceiling": 64})
    clock.now += 60
    audit.on_change(Audit(), "jrc", {"from": 15, "to": 7, "reason": "overload", "ceiling": 64})
    assert [kind for kind, _ in events] == ["concurrency_limit_changed"] * 2
    first, second = (details for _, details in events)
    assert (first["from"], first["to"], first["decreases"], first["increases"]) == (16, 8, 1, 1)
    assert (second["from"], second["to"], second["decreases"], second["increases"]) == (8, 7, 1, 7)
    assert (second["lowest"], second["highest"]) == (7, 15)


def test_pacing_summary_event_and_metrics():
    events = []

    class Audit:
        def emit(self, kind, **fields):
            events.append((kind, fields))

    pacing = {"sim": {"limit": 12, "ceiling": 128, "adaptive": True, "min_limit": 8, "max_limit": 17, "overloads": 3,
                      "requests": 480, "in_flight": 0, "slot_wait_seconds": 1.5, "budget_wait_seconds": 0.0}}
    kept = record_pacing(Audit(), pacing)
    assert kept["sim"]["overloads"] == 3 and "in_flight" not in kept["sim"]
    assert events[0][0] == "pacing_summary" and events[0][1]["details"]["providers"] == kept
    assert record_pacing(Audit(), {}) == {} and len(events) == 1
    calm = {"sim": {**pacing["sim"], "overloads": 0, "decreases": 0}}
    assert record_pacing(Audit(), calm)["sim"]["limit"] == 12 and len(events) == 1  # nobody pushed back: no event


def test_monitor_shows_the_live_limit_of_each_provider():
    snap = {
        "in_flight": 12,
        "max_concurrency": 128,
        "pacing": {
            "jrc": {"limit": 12, "ceiling": 128, "adaptive": True, "min_limit": 8, "max_limit": 17, "in_flight": 12,
                    "waiting": 116, "overloads": 3, "requests": 400, "slot_wait_seconds": 300.0, "budget_wait_seconds": 20.0},
            "local": {"limit": 4, "ceiling": 4, "adaptive": False, "in_flight": 1, "waiting": 0, "overloads": 0, "requests": 0},
        },
    }
    text = describe_requests(snap)
    assert "jrc limit [b]12[/b]/128 (8–17) [$warning]429s 3[/]\n  queued 116 · wait 0.80 s/req" in text
    assert "local limit [b]4[/b]/4 (fixed) 429s 0\n  queued 0 · wait –" in text


def test_config_checks_the_pacing_keys(tmp_path):
    from w2c_tui.config import ConfigError

    for line, words in (
        ("initial_concurrency = 40", "initial_concurrency): must not exceed max_concurrency (32)"),
        ("min_concurrency = 0", "min_concurrency): Input should be greater than or equal to 1"),
        ("tokens_per_minute = -1", "tokens_per_minute): Input should be greater than or equal to 0"),
        ("adaptive_concurrency = 3", "adaptive_concurrency)"),
    ):
        config = write_config(tmp_path, "http://127.0.0.1:9/v1", line + "\n")
        with pytest.raises(ConfigError) as caught:
            load_config(config, environ={})
        assert "config.toml:" in str(caught.value) and words in str(caught.value)
    config = write_config(tmp_path, "http://127.0.0.1:9/v1", "tokens_per_minute = 90000\ninitial_concurrency = 4\n")
    provider = load_config(config, environ={}).settings.providers["sim"]
    assert (provider.tokens_per_minute, provider.initial_concurrency, provider.adaptive_concurrency) == (90000, 4, True)


async def test_the_monitor_shows_the_live_limit_during_a_run_against_the_capacity_sim(tmp_path, monkeypatch):
    from w2c_tui.sim import SimServer, SimSettings
    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.monitor import MonitorScreen
    from w2c_tui.tui.widgets.request_stats import RequestStats

    monkeypatch.chdir(tmp_path)
    with SimServer(SimSettings(latency_ms=200, capacity_in_flight=3)) as server:
        write_config(
            tmp_path,
            server.base_url,
            provider="cap",
            provider_keys={"initial_concurrency": 6},
            run={"run_key": "capacity"},
            data={"n_per_label": 40},
            pipelines={"do_llm_judge": False, "do_mcq_logprob": False},
            mlflow={"enabled": False},
        )
        app = W2cApp("config.toml")
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("ctrl+r")
            deadline = asyncio.get_running_loop().time() + 30

            def shown() -> str:
                if not isinstance(app.screen, MonitorScreen):
                    return ""
                return str(app.screen.current_panel().query_one(RequestStats).render())

            # The first round is 6 at once against 3 places: refused, so the limit shrinks.
            live = re.compile(r"cap limit (\d+)/32 \((\d+)–6\) 429s (\d+)")
            while not (found := live.search(shown())) or int(found.group(2)) >= 6:
                assert asyncio.get_running_loop().time() < deadline, shown()
                await pilot.pause(0.1)
            assert int(found.group(1)) <= 6 and int(found.group(3)) >= 1
            await pilot.press("c")
            record = app.workspace.launches[0]
            while not record.ended:
                assert asyncio.get_running_loop().time() < deadline + 30
                await pilot.pause(0.1)


def test_monitor_pacing_snapshot(snap_compare, tmp_path, monkeypatch):
    """The Monitor of a run paced by a provider's 429s (a frozen snapshot, drawn once)."""
    from test_tui_snapshots import SIZE, FrozenState, make_app, settle
    from w2c_tui.tui.launches import MonitoredSession

    class PacedState(FrozenState):
        def snapshot(self) -> dict:
            return {
                **super().snapshot(),
                "pacing": {
                    "jrc": {"limit": 12, "ceiling": 128, "adaptive": True, "min_limit": 8, "max_limit": 17,
                            "in_flight": 12, "waiting": 116, "overloads": 9, "requests": 1834,
                            "slot_wait_seconds": 2100.0, "budget_wait_seconds": 0.0},
                },
            }

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    app = make_app(tmp_path / "workdir", start_mode="monitor")
    app.workspace.extra_monitored.append(MonitoredSession("demo", "paced / 3f9a1c0d2b7e4a55 · llama-3.3-70b-instruct", "", PacedState()))

    async def ready(pilot):
        await settle(pilot, lambda: pilot.app.screen.current_panel() is not None)

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


def test_the_provider_editor_keeps_the_pacing_keys_it_does_not_show():
    from w2c_tui.config.schema import ProviderSettings as ProviderConfig
    from w2c_tui.tui.screens.setup.values import apply_provider, provider_values

    original = ProviderConfig(base_url="http://127.0.0.1:9/v1", max_concurrency=64, initial_concurrency=32,
                              tokens_per_minute=90000, adaptive_concurrency=False, endpoint_id="lab")
    values = provider_values("lab", original)
    values.model_prefixes = "llama-"
    edited, errors = apply_provider(values)
    assert not errors and edited.model_prefixes == ["llama-"]
    assert (edited.initial_concurrency, edited.tokens_per_minute, edited.adaptive_concurrency, edited.endpoint_id) == (32, 90000, False, "lab")
    values.max_concurrency = "16"  # under the initial_concurrency kept from the file
    _, errors = apply_provider(values)
    assert errors == {"max_concurrency": "initial_concurrency = 32 (in the file): must not exceed max_concurrency (16) (got 32)"}
