"""Every figure of issue 25 beside its floor and its goal, in one run.

    .venv/bin/python benchmarks/floors.py                 # the full run (~5 min on the 2-core machine)
    .venv/bin/python benchmarks/floors.py --quick         # fewer examples, rounds and repeats (~1 min)
    .venv/bin/python benchmarks/floors.py --keep /tmp/w2c-sessions   # keep (and reuse) the synthetic sessions

Prints one markdown table, figure | measured | floor | goal | met?, from the other scripts'
functions, all in this process's run (this machine is shared: a goal is a count or a ratio
taken here, not a wall time from another day):
1. `throughput.measure`, whole sessions against `w2c-tui sim` (latency 200 ms, C=32; the median
   of 3 rounds, the pipelines taking turns): requests per example, efficiency (achieved req/s /
   (C / latency)) and the client's CPU per request,
   for mcq, mcq_logprob and llm_judge against the sim imitating vLLM (token ids in the echo);
   requests per example of mcq_logprob against the sim imitating a vLLM gateway (no
   /tokenize), an older vLLM (no ids in the echo: the /tokenize path) and llama-cpp-python
   (whose shifted echo the launch refuses).
2. `http_client_cost`'s row f (a hand-written HTTP/1.1 client on asyncio streams: the event
   loop's floor for one request) and row e (`ApiClient.chat` alone, no session), best of rounds.
3. `sessions_list`: `w2c-tui sessions` over 200 synthetic sessions of 3,652 examples beside
   `w2c-tui --version` (the floor of starting the CLI), and the Sessions screen filled.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import http_client_cost as hcc  # noqa: E402
import orjson  # noqa: E402
import sessions_list  # noqa: E402
import throughput  # noqa: E402
from w2c_tui.runtime import tune_gc  # noqa: E402
from w2c_tui.store.call_files import iter_calls  # noqa: E402

LATENCY_MS = 200.0  # the L
CHAT_CPU_GOAL_MS = 0.5
LOGPROB_CPU_GOAL_MS = 1.0
EFFICIENCY_GOAL = 0.97
LOGPROB_REQ_GOAL = 1.1
# mcq_logprob's requests per example under the sim's other conventions (--imitate), with
# what a reader should know about each.
CONVENTIONS = {
    "vllm-gateway": "vllm-gateway (no /tokenize)",
    "vllm-no-echo-ids": "vllm-no-echo-ids (older vLLM: /tokenize path)",
    "llama-cpp-python": "llama-cpp-python (one prompt a request, shifted echo)",
}
FLOOR_HTTP_LATENCY_MS = 50.0  # as http_client_cost.py's default: the floor does not depend on it

Result = dict[str, Any] | str  # a throughput row, or why the session did not run


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- 1. sessions against the sim ------------------------------------------------------------


def sessions_against_sim(imitate: str, pipelines: list[str], concurrency: int, n_examples: int,
                         warm: bool, rounds: int = 1) -> dict[str, Result]:
    """Fresh sessions of each pipeline against a sim of these conventions, the pipelines taking
    turns `rounds` times; each figure is the median of its rounds (one slow round on this shared
    machine says more about the neighbours than about the client). A refusal is kept as its reason."""
    process, url = throughput.start_sim(LATENCY_MS, imitate)
    results: dict[str, Result] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="w2c-floors-") as tmp:
            measured: dict[str, list[dict[str, Any]]] = {pipeline: [] for pipeline in pipelines}
            for number in range(rounds):
                for pipeline in pipelines:
                    if pipeline in results:
                        continue  # refused: asking again gives the same reason
                    folder = Path(tmp) / f"{pipeline}-{number}"
                    folder.mkdir()
                    if warm and number == 0:  # a short uncounted session first: a pipeline's first session imports its modules
                        (folder / "warm").mkdir()
                        try:
                            throughput.measure(url, pipeline, 1, 4, folder / "warm", process.pid)
                        except Exception as exc:  # noqa: BLE001 - the counted session below reports it
                            log(f"{imitate} {pipeline} warm-up: {type(exc).__name__}: {exc}")
                    try:
                        row = throughput.measure(url, pipeline, concurrency, n_examples, folder, process.pid)
                        row["efficiency"] = throughput.efficiency(row, LATENCY_MS / 1000.0)
                        row["parse_floor_ms"], row["body_kb"] = parse_floor(folder)
                        measured[pipeline].append(row)
                    except Exception as exc:  # noqa: BLE001 - a refused convention is a figure too
                        results[pipeline] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    log(f"{imitate} {pipeline} round {number + 1}: {results.get(pipeline) or measured[pipeline][-1]}")
            for pipeline, rows in measured.items():
                if pipeline not in results:
                    results[pipeline] = throughput.median_rows([[row] for row in rows])[0]
    finally:
        process.terminate()
        process.wait()
    return results


def parse_floor(folder: Path, n_bodies: int = 64, repeats: int = 5) -> tuple[float | None, float | None]:
    """(best CPU ms to parse one answer body of the session's trace with orjson, its mean size in KB).

    No client that reads the answers spends less a request: the floor of a log-prob request,
    whose answer echoes every prompt token. The bodies are the recorded answers, written compact.
    """
    bodies: list[bytes] = []
    for packed in sorted(folder.rglob("llm_calls/*.jsonl.zst")):
        for record in iter_calls(packed.with_suffix("")):
            if isinstance(record.get("response"), dict) and len(bodies) < n_bodies:
                bodies.append(orjson.dumps(record["response"]))
    if not bodies:
        return None, None
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for body in bodies:
            orjson.loads(body)
        best = min(best, (time.process_time() - start) / len(bodies))
    return 1000 * best, sum(map(len, bodies)) / len(bodies) / 1000


# --- 2. the HTTP floor ----------------------------------------------------------------------


def http_floor(concurrency: int, requests: int, rounds: int) -> dict[str, float | str]:
    """Best CPU ms per request of http_client_cost's rows f and e, interleaved round by round."""
    process, url = throughput.start_sim(FLOOR_HTTP_LATENCY_MS, "vllm")
    best: dict[str, float | str] = {}
    try:
        body = hcc.chat_body()
        for number in range(rounds):
            for key, variant in (("f", hcc.RawStreams), ("e", hcc.OurClient)):
                if isinstance(best.get(key), str):
                    continue
                try:
                    cpu_ms, rate = asyncio.run(hcc.measure(variant(url, concurrency, body), requests))
                except Exception as exc:  # noqa: BLE001
                    best[key] = f"{type(exc).__name__}: {exc}"
                    continue
                best[key] = min(cpu_ms, best.get(key, float("inf")))
                log(f"http round {number + 1} row {key}: {cpu_ms:.3f} ms/req, {rate:.0f} req/s")
    finally:
        process.terminate()
        process.wait()
    return best


# --- 3. listing sessions --------------------------------------------------------------------


def listing(keep: str | None, n_sessions: int, repeats: int, screen_repeats: int) -> dict[str, Any]:
    workdir = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="w2c-floors-sessions-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        sessions_list.build(workdir, n_sessions)
        log(f"{n_sessions} sessions under {workdir} ({time.perf_counter() - start:.1f} s to build)")
        # One cold listing (no summaries: it reads every row and writes them), then warm ones.
        version, cold, warm, _, n_listed = sessions_list.time_listing(workdir, repeats, 1)
        log(f"sessions: version {min(version):.3f} s, cold {min(cold):.3f} s, warm {min(warm):.3f} s, {n_listed} listed")
        empty, start_only, filled = sessions_list.time_screen(workdir, screen_repeats) if screen_repeats else ([], [], [])
        return {"version": min(version), "cold": min(cold), "warm": min(warm), "listed": n_listed,
                "app_start": min(start_only, default=None), "filled": min(filled, default=None),
                "empty_app": min(empty, default=None)}
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


# --- the table ------------------------------------------------------------------------------


def verdict(value: float | None, ok: Callable[[float], bool]) -> str:
    return "–" if value is None else ("met" if ok(value) else "**missed**")


def figure_of(result: Result | None, key: str) -> float | None:
    return result[key] if isinstance(result, dict) else None


FAILURES: list[str] = []  # why a figure is missing, printed under the table


def failed(reason: str, word: str = "failed") -> str:
    if reason not in FAILURES:
        FAILURES.append(reason)
    return f"{word} (F{FAILURES.index(reason) + 1})"


def cell(result: Result | None, key: str, spec: str, unit: str = "") -> str:
    if isinstance(result, dict):
        return f"{result[key]:{spec}}{unit}"
    if not result:
        return "not run"
    return failed(result, "refused at launch" if result.startswith("LaunchError") else "failed")


def cpu_ceiling(result: Result | None, concurrency: int) -> float | None:
    """The efficiency at which client and sim together use every core of this machine (they
    share it): cores ÷ (their CPU a request), over C/L. None when a figure is missing."""
    if not isinstance(result, dict) or not result.get("sim_cpu_ms_per_request"):
        return None
    cpu_ms = result["cpu_ms_per_request"] + result["sim_cpu_ms_per_request"]
    return (os.cpu_count() or 1) * 1000.0 / cpu_ms / (concurrency / (LATENCY_MS / 1000.0))


def table(main: dict[str, Result], others: dict[str, Result], http: dict[str, float | str],
          lists: dict[str, Any], concurrency: int, n_sessions: int) -> list[tuple[str, str, str, str, str]]:
    rows = []
    mcq, logprob, judge = main.get("mcq"), main.get("mcq_logprob"), main.get("llm_judge")

    # Requests per example.
    rows.append(("requests/example, mcq (sim vllm)", cell(mcq, "req_per_example", ".2f"), "1.00", "1.00",
                 verdict(figure_of(mcq, "req_per_example"), lambda v: v <= 1.0 + 1e-9)))
    rows.append(("requests/example, mcq_logprob, sim vllm (token ids)", cell(logprob, "req_per_example", ".2f"),
                 "1.00", f"≤ {LOGPROB_REQ_GOAL}",
                 verdict(figure_of(logprob, "req_per_example"), lambda v: v <= LOGPROB_REQ_GOAL)))
    for imitate, label in CONVENTIONS.items():
        result = others.get(imitate)
        goal = f"≤ {LOGPROB_REQ_GOAL}" if imitate == "vllm-gateway" else "– ¹"
        value = figure_of(result, "req_per_example") if imitate == "vllm-gateway" else None
        floor = "–" if imitate == "llama-cpp-python" else "1.00"  # no usable echo: nothing to count against
        rows.append((f"requests/example, mcq_logprob, sim {label}", cell(result, "req_per_example", ".2f"),
                     floor, goal, verdict(value, lambda v: v <= LOGPROB_REQ_GOAL)))
    rows.append(("requests/example, llm_judge (sim vllm)", cell(judge, "req_per_example", ".2f"), "2.00 ²", "–", "–"))

    # Efficiency at C.
    for name, result in (("mcq", mcq), ("mcq_logprob", logprob)):
        floor_text = "1.00"
        ceiling = cpu_ceiling(result, concurrency)
        if ceiling is not None and ceiling < 1.0:  # this machine's cores run out before the latency does
            floor_text = f"1.00; {ceiling:.2f} on this machine's {os.cpu_count()} cores ⁶"
        rows.append((f"efficiency at C={concurrency}, {name} (req/s ÷ C/L)", cell(result, "efficiency", ".3f"), floor_text,
                     f"≥ {EFFICIENCY_GOAL}", verdict(figure_of(result, "efficiency"), lambda v: v >= EFFICIENCY_GOAL)))

    # Client CPU per request at C, beside the event loop's floor for one HTTP request.
    floor = http.get("f")
    floor_cell = f"{floor:.3f} ms (row f)" if isinstance(floor, float) else failed(str(floor))
    for name, result, goal in (("mcq", mcq, CHAT_CPU_GOAL_MS), ("llm_judge", judge, CHAT_CPU_GOAL_MS),
                               ("mcq_logprob", logprob, LOGPROB_CPU_GOAL_MS)):
        measured = cell(result, "cpu_ms_per_request", ".2f", " ms")
        value = figure_of(result, "cpu_ms_per_request")
        parse = figure_of(result, "parse_floor_ms")
        if value is not None and isinstance(floor, float):
            measured += f" (×{value / floor:.0f} the floor)"
        floors = floor_cell
        if name == "mcq_logprob" and parse is not None:  # its answers are what bounds it, not HTTP
            floors = f"{floor_cell}; parsing one answer alone (orjson, {result['body_kb']:.0f} KB): {parse:.2f} ms ⁵"
        rows.append((f"client CPU/request at C={concurrency}, {name} (whole session)", measured, floors,
                     f"≤ {goal} ms", verdict(value, lambda v, goal=goal: v <= goal)))
    call = http.get("e")
    if isinstance(call, float):
        measured = f"{call:.3f} ms" + (f" (×{call / floor:.0f} the floor)" if isinstance(floor, float) else "")
    else:
        measured = failed(str(call))
    rows.append((f"client CPU/request at C={concurrency}, `ApiClient.chat` alone (row e) ³", measured, floor_cell, "–", "–"))

    # Listing sessions.
    version = f"{lists['version']:.3f} s (`--version`)"
    title = f"`w2c-tui sessions`, {lists['listed']} sessions of {sessions_list.N_EXAMPLES:,} examples"
    rows.append((f"{title}, warm (one summary each)", f"{lists['warm']:.3f} s (×{lists['warm'] / lists['version']:.1f})",
                 version, f"≤ {sessions_list.GOAL_LIST_S} s", verdict(lists["warm"], lambda v: v <= sessions_list.GOAL_LIST_S)))
    rows.append((f"{title}, cold (reads every row, writes the summaries)",
                 f"{lists['cold']:.3f} s (×{lists['cold'] / lists['version']:.0f})", version, "– ⁴", "–"))
    if lists.get("filled") is not None:
        beyond = lists["filled"] - lists["app_start"]
        rows.append((f"Sessions screen filled, {lists['listed']} sessions: beyond the app's own start",
                     f"{beyond:.3f} s (filled at {lists['filled']:.3f} s)",
                     f"{lists['app_start']:.3f} s (app, empty workdir); {lists['empty_app']:.3f} s (empty Textual app)",
                     f"≤ {sessions_list.GOAL_LIST_S} s", verdict(beyond, lambda v: v <= sessions_list.GOAL_LIST_S)))
    if lists["listed"] != n_sessions:
        rows.append(("sessions listed", str(lists["listed"]), str(n_sessions), str(n_sessions), "**missed**"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer examples, rounds and repeats: a smoke run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--keep", metavar="DIR", help="write the synthetic sessions here and keep them (reused next time)")
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    tune_gc()  # as `w2c-tui run` does
    c = args.concurrency
    waves, other_waves, session_rounds, http_requests, http_rounds, repeats, screen_repeats = (
        (4, 1, 1, 500, 1, 2, 2) if args.quick else (16, 4, 3, 1500, 3, 5, 3))  # screen: its first repeat imports the app
    started, load_before = datetime.datetime.now(datetime.timezone.utc), os.getloadavg()

    log(f"1/3 sessions against the sim (C={c}, {c * waves} examples each, median of {session_rounds} rounds; "
        f"other conventions {c * other_waves})")
    main_rows = sessions_against_sim("vllm", ["mcq", "mcq_logprob", "llm_judge"], c, c * waves, warm=True,
                                     rounds=session_rounds)
    others: dict[str, Result] = {}
    for imitate in CONVENTIONS:
        others[imitate] = sessions_against_sim(imitate, ["mcq_logprob"], c, c * other_waves, warm=False)["mcq_logprob"]
    log(f"2/3 the HTTP floor ({http_rounds} round(s) of {http_requests} requests)")
    http = http_floor(c, http_requests, http_rounds)
    log(f"3/3 listing {args.sessions} sessions")
    lists = listing(args.keep, args.sessions, repeats, screen_repeats)

    load_after = os.getloadavg()
    print(f"\n{started:%Y-%m-%d %H:%M} UTC{' (--quick)' if args.quick else ''}; python {sys.version.split()[0]}; "
          f"sim latency L = {LATENCY_MS:.0f} ms, C = {c}, {c * waves} examples a pipeline; load average "
          f"{load_before[0]:.1f} → {load_after[0]:.1f} (2 cores shared: wall and CPU figures move with it)\n")
    print("| figure | measured | floor | goal | met? |")
    print("|---|---|---|---|---|")
    for row in table(main_rows, others, http, lists, c, args.sessions):
        print("| " + " | ".join(row) + " |")
    print(
        "\n¹ no goal: without ids in the echo the client takes the /tokenize path (1 completions + 5 /tokenize);"
        " llama-cpp-python's echo is shifted, which the launch refuses before any example.\n"
        "² target + judge; the sim makes ~10% of judge answers malformed on purpose, each repaired by one more request.\n"
        f"³ http_client_cost.py's row e: the chat call path with its call records, no session (best of {http_rounds});"
        f" row f, the floor, is a hand-written HTTP/1.1 client on asyncio streams, same sim, same C.\n"
        "⁴ a listing with no `session_summary.json` (removed first), as the first after an upgrade;"
        " it writes them, and later listings read one each.\n"
        "⁵ the answers recorded in the session's trace, re-encoded compact; each echoes the context and the four"
        " choices' prompts with their log-probs, so no client that reads them spends less a request.\n"
        "⁶ client and sim share this machine: at (client + sim) CPU a request, its cores give at most this"
        " share of C/L; a server of its own would not take the client's cores."
    )
    for number, reason in enumerate(FAILURES, 1):
        print(f"\nF{number}: {reason}")


if __name__ == "__main__":
    main()
