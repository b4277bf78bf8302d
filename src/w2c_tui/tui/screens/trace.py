"""The whole story of one example: question, tools, each pipeline's path to its label,
every API attempt and every audit event. n / p step through the rows of the table it
came from, so a researcher can read the wrong answers one after another.
"""

from __future__ import annotations

import json
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Collapsible, Footer, Static

from w2c_tui.labels import LABELS
from w2c_tui.metrics.unreadable import scored_as
from w2c_tui.report.numbers import decimal
from w2c_tui.session.checkpoints import predicted_label
from w2c_tui.session.kinds import kind_of
from w2c_tui.session.data import PipelineTrace, SessionData, TraceDetail
from w2c_tui.session.rows import UNREADABLE_MARKER
from w2c_tui.session.row_models import (
    AuditEvent,
    CallRecord,
    ChoiceRow,
    LlmJudgeRow,
    LogprobRow,
    McqRow,
    PreferenceRow,
    StabilityRow,
    TargetRow,
    Usage,
)
from w2c_tui.tui.background import background
from w2c_tui.tui.formatting import label as short_label
from w2c_tui.tui.formatting import short_exp
from w2c_tui.tui.widgets.item_line import ItemLine
from w2c_tui.tui.widgets.lazy_collapsible import LazyCollapsible
from w2c_tui.tui.widgets.nav_bar import NavBar

JSON_LIMIT = 20_000  # characters of raw JSON shown per request / response
# Characters of one text shown (an answer, a question, a judge's reply). Laying out a 10 MB
# answer took the UI 26 s; 20,000 characters are pages more than anyone reads on screen.
TEXT_LIMIT = 20_000
WHOLE_TEXT_AT = "the session folder's checkpoints/ and llm_calls/ files hold it whole"


def _or(value: Any, default: Any) -> Any:
    """A field as stored, or `default` where the row has none."""
    return default if value is None else value


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text` cut to `limit` characters, with a note saying how much was left out and where it is."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit:,} more characters not shown; {WHOLE_TEXT_AT})"


def pretty_json(value: Any, limit: int = JSON_LIMIT) -> str:
    if isinstance(value, str):
        return clip(value, limit)
    # Indenting runs the json module's Python encoder (seconds for a large echo): only for values
    # whose compact form (C speed, NaN kept as the server sent it) is small enough to be shown.
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= 4 * limit:  # indenting then takes milliseconds
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return clip(text, limit)


def plain(text: Any) -> Static:
    return Static(clip(str(text if text is not None else "–")), markup=False, classes="trace-text")


def markup(text: str, classes: str = "trace-line") -> Static:
    return Static(Content.from_markup(text), classes=classes)


def verdict(predicted: str | None, gold: str | None) -> str:
    if predicted is None:
        return "[$warning]no prediction[/]"
    if gold is None:
        return f"[b]{escape(predicted)}[/b]"
    if predicted == gold:
        return f"[b $success]{escape(predicted)} ✓[/]"
    return f"[b $error]{escape(predicted)} ✗[/] [dim](gold {escape(gold)})[/]"


def short_verdict(predicted: str | None, gold: str | None) -> str:
    if predicted is None:
        return "[$warning]·[/]"
    text = escape(short_label(predicted))
    if gold is None:
        return f"[b]{text}[/b]"
    return f"[b $success]{text} ✓[/]" if predicted == gold else f"[b $error]{text} ✗[/]"


# -- pipeline sections -------------------------------------------------------------------


def judge_widgets(trace: PipelineTrace, gold: str | None) -> list[Widget]:
    row = LlmJudgeRow.of(trace.row or {})
    target = TargetRow.of(trace.target or {})
    widgets: list[Widget] = [markup("[b]target answer[/b]"), plain(target.raw_text or row.target_raw)]
    if target.reasoning_text:
        widgets.append(LazyCollapsible(lambda: [plain(target.reasoning_text)], title="target reasoning"))
    if target.native_tool_calls:
        widgets.append(LazyCollapsible(lambda: [plain(pretty_json(target.native_tool_calls))], title="native tool calls"))
    widgets.append(markup("[b]judge output[/b]"))
    widgets.append(plain(row.judge_raw))
    if row.judge_used_retry:
        widgets.append(markup("[b]judge repair output[/b]"))
        widgets.append(plain(row.judge_raw_retry))
    steps = ["raw"]
    if row.judge_parse_failed_first:
        steps.append(f"[$warning]parse failed[/] ({escape(str(row.judge_exception_first or '?'))})")
    if row.judge_used_retry:
        steps.append("repair request")
        if row.judge_parse_failed_second:
            steps.append(f"[$error]parse failed again[/] ({escape(str(row.judge_exception_second or '?'))})")
    shown = shown_label(trace)
    if not unreadable(trace):
        steps += [f"parsed by [b]{escape(str(row.judge_parse_path or '?'))}[/b]", verdict(shown, gold)]
    elif shown is None:  # counted as the session's figures count it (docs/metrics.md §1)
        steps.append("[$error]unreadable[/]: left out of the figures")
    else:
        steps += ["[$error]unreadable[/], scored as the earlier suite did", verdict(shown, gold)]
    widgets.append(markup("parse path  " + " → ".join(steps)))
    if row.judge_rationale:
        widgets.append(markup(f"[dim]rationale:[/] {escape(clip(str(row.judge_rationale)))}"))
    return widgets


def unreadable(trace: PipelineTrace) -> bool:
    """A judge's row whose label could not be read (the earlier suite's rows too)."""
    return LlmJudgeRow.of(trace.row or {}).judge_fallback_to_cannot_answer is True


def shown_label(trace: PipelineTrace) -> str | None:
    """The pipeline's label as its figures count it: an unreadable judge label is none (left
    out) or cannot_answer, by the session's judge_unreadable_as."""
    if unreadable(trace):
        return scored_as(trace.unreadable_as)
    return predicted_label(trace.exp_name, trace.row or {})


def mcq_widgets(trace: PipelineTrace, gold: str | None) -> list[Widget]:
    row = McqRow.of(trace.row or {})
    return [
        markup("[b]classifier output[/b]"),
        plain(row.raw_mcq_output),
        markup(f"digit {escape(str(row.predicted_index))} → {verdict(predicted_label(trace.exp_name, trace.row or {}), gold)}"),
    ]


def _score(value: Any) -> str:
    return f"{value:9.3f}" if isinstance(value, (int, float)) else "     -inf" if value is None else f"{str(value):>9}"


def logprob_widgets(trace: PipelineTrace, gold: str | None) -> list[Widget]:
    row = LogprobRow.of(trace.row or {})
    widgets: list[Widget] = []
    mode = _or(row.mode, "?")
    widgets.append(
        markup(
            f"mode [b]{escape(str(mode))}[/b]"
            + (f"   split by [b]{escape(str(row.split))}[/b]" if row.split else "")
            + ("   [$warning]LCP split used[/]" if row.used_lcp_split else "")
        )
    )
    kind = kind_of(trace.exp_name)
    variants = kind.variants if kind else ()
    winners = {v: kind.variant_label(trace.row or {}, v) for v in variants}
    widgets.append(markup("   ".join(f"{v} {short_verdict(winners[v], gold)}" for v in variants)))
    if mode == "string_fallback":
        widgets.append(markup(f"[$warning]all scores non-finite[/] → MCQ string fallback ({escape(str(row.fallback_trigger))})"))
        widgets.append(plain(row.string_fallback_raw_output))
    choices = sorted(
        (ChoiceRow.of(c) for c in trace.choices),
        key=lambda c: LABELS.index(c.answer_name) if c.answer_name in LABELS else 9,
    )
    if choices:
        header = f"{'choice':<17}{'raw':>9}{'tok-norm':>9}  {'char-norm':>9}  {'byte-norm':>9}  {'tokens':>6}"
        lines = [f"[b]{header}[/b]"]
        for choice in choices:
            name = str(choice.answer_name)
            mark = " [$success]◀ gold[/]" if name == gold else ""
            lines.append(
                f"{escape(name):<17}{_score(choice.raw_score)}{_score(choice.token_norm_score)}"
                f"  {_score(choice.char_norm_score)}  {_score(choice.byte_norm_score)}"
                f"  {str(_or(choice.num_tokens, '?')):>6}{mark}"
            )
        widgets.append(markup("\n".join(lines), "trace-table"))
        for choice in choices:
            widgets.append(
                LazyCollapsible(
                    lambda choice=choice: [markup(token_split(choice), "trace-text")],
                    title=f"token split · {choice.answer_name}" + (" (LCP)" if choice.used_lcp_split else ""),
                )
            )
    elif mode != "string_fallback":
        widgets.append(markup("[dim]no per-choice debug rows (debug_per_choice.jsonl) for this example[/]"))
    return widgets


def token_split(choice: ChoiceRow | dict[str, Any]) -> str:
    """Context tail | continuation tokens with their log-probabilities."""
    choice = choice if isinstance(choice, ChoiceRow) else ChoiceRow.of(choice)
    tail = "".join(str(t) for t in choice.context_tail_tokens or [])
    parts = []
    for pair in choice.continuation_tokens or []:
        token, logprob = (pair + [None, None])[:2] if isinstance(pair, list) else (pair, None)
        shown = escape(repr(str(token))[1:-1])
        lp = f"{logprob:.2f}" if isinstance(logprob, (int, float)) else "?"
        parts.append(f"[reverse]{shown}[/reverse][dim]{lp}[/]")
    preview = escape(repr(tail)[1:-1][-80:])
    return f"[dim]…{preview}[/] [b $accent]┃[/] " + " ".join(parts) + (
        f"\n[dim]prompt tokens {_or(choice.prompt_tok_count, '?')}   lcp {choice.lcp}[/]"
    )


def stability_widgets(trace: PipelineTrace, gold: str | None) -> list[Widget]:
    row = StabilityRow.of(trace.row or {})
    labels = row.run_labels or []
    chips = []
    for value in labels:
        style = "$text-muted" if value is None else "$success" if value == gold else "$error"
        chips.append(f"[{style}]{escape(short_label(value))}[/]")
    widgets: list[Widget] = [
        markup(f"runs  {' '.join(chips) if chips else '–'}"),
        markup(
            f"mode {verdict(row.mode_label, gold)}  {_or(row.mode_count, '?')}/{_or(row.n_runs, len(labels))}"
            f"   consistency {_or(row.consistency, '–')}   entropy {decimal(row.entropy)}"
            f"   flip rate {decimal(row.flip_rate)}   T {_or(row.temperature, '?')}"
        ),
    ]
    texts = row.run_target_texts or []
    judged = row.run_judge_raw_outputs or []

    def runs() -> list[Widget]:
        shown: list[Widget] = []
        for index, text in enumerate(texts):
            body = f"{text}\n\n— judge —\n{judged[index] if index < len(judged) else ''}"
            title = f"run {index}: {labels[index] if index < len(labels) else '?'}"
            shown.append(LazyCollapsible(lambda body=body: [plain(body)], title=title))
        return shown

    if texts:
        widgets.append(LazyCollapsible(runs, title=f"answers and verdicts of the {len(texts)} runs"))
    if row.run_aux and not texts:
        widgets.append(LazyCollapsible(lambda: [plain(pretty_json(row.run_aux))], title="per-run details"))
    return widgets


def describe_request(call: dict[str, Any]) -> str:
    """The part of a request a researcher reads first: the messages or the prompt."""
    request = call.get("request")
    if not isinstance(request, dict):
        return pretty_json(request)
    if isinstance(request.get("messages"), list):
        parts = []
        for message in request["messages"]:
            if isinstance(message, dict):
                parts.append(f"── {message.get('role', '?')} ──\n{message.get('content', '')}")
        return "\n".join(parts)
    prompt = request.get("prompt")
    if isinstance(prompt, list):
        return "\n".join(f"── prompt {i} ──\n{p}" for i, p in enumerate(prompt))
    return str(prompt) if prompt is not None else pretty_json(request)


def describe_response(call: dict[str, Any]) -> str:
    response = call.get("response")
    if call.get("error"):
        head = f"error: {call['error']}\n"
    else:
        head = ""
    if isinstance(response, dict):
        choices = response.get("choices") or []
        texts = []
        for choice in choices:
            message = choice.get("message") or {}
            if message:
                texts.append(str(message.get("content") or "") + (f"\n(tool calls: {json.dumps(message['tool_calls'])})" if message.get("tool_calls") else ""))
            elif "logprobs" in choice:
                tokens = (choice.get("logprobs") or {}).get("tokens") or []
                texts.append(f"[{len(tokens)} echoed tokens] {choice.get('text', '')!r}")
            else:
                texts.append(str(choice.get("text", "")))
        return head + "\n".join(texts)
    return head + (str(response) if response is not None else "")


def call_title(index: int, call: dict[str, Any]) -> str:
    record = CallRecord.of(call)
    status, latency = record.status, record.latency_ms
    retry = f" · retry: {record.retry_cause}" if record.retry_cause else ""
    stage = record.pipeline or ""
    endpoint, attempt = _or(record.endpoint, "?"), _or(record.attempt, "?")
    return (
        f"#{index + 1} {endpoint} {status if status is not None else 'no answer'} · "
        f"{latency:.0f} ms · attempt {attempt} · {stage} · {_or(record.model, '')}{retry}"
        if isinstance(latency, (int, float))
        else f"#{index + 1} {endpoint} {status} · attempt {attempt}{retry}"
    )


def call_widget(index: int, call: dict[str, Any]) -> Collapsible:
    return LazyCollapsible(
        lambda: call_body(call),
        title=call_title(index, call),
        classes="call" + (" -failed" if (CallRecord.of(call).status or 0) != 200 else ""),
    )


def call_body(call: dict[str, Any]) -> list[Widget]:
    record = CallRecord.of(call)
    settings = record.settings or {}
    usage = Usage.of(record.usage) if isinstance(record.usage, dict) else Usage()
    meta = (
        f"[dim]{escape(str(_or(record.ts_utc, '')))} · {escape(str(_or(record.provider, '')))} "
        f"{escape(str(_or(record.base_url, '')))} · settings {escape(json.dumps(settings, default=str))}"
        + (f" · tokens {_or(usage.prompt_tokens, '?')} in / {_or(usage.completion_tokens, '?')} out" if usage else "")
        + "[/]"
    )
    return [
        markup(meta),
        markup("[b]sent[/b]"),
        plain(describe_request(call)),
        markup("[b]received[/b]"),
        plain(describe_response(call)),
        LazyCollapsible(lambda: [plain(pretty_json(record.request))], title="request JSON"),
        LazyCollapsible(lambda: [plain(pretty_json(record.response))], title="response JSON"),
    ]


def pipeline_section(trace: PipelineTrace, gold: str | None) -> Collapsible:
    name = trace.exp_name
    kind = kind_of(name)
    if trace.row is None:
        body: list[Widget] = [markup("[dim]no checkpoint row for this example (not run yet, or failed)[/]")]
    elif kind and kind.trace_view in TRACE_VIEWS:
        body = TRACE_VIEWS[kind.trace_view](trace, gold)
    else:
        body = [plain(pretty_json(trace.row))]
    body.append(LazyCollapsible(lambda: [plain(pretty_json(trace.row))], title="checkpoint row"))
    if trace.calls:
        calls = trace.calls
        retried = sum(1 for c in calls if CallRecord.of(c).retry_cause)
        note = f", {retried} retried" if retried else ""
        # Many calls (stability sweeps, retries) stay folded: mounting them all is slow.
        body.append(
            LazyCollapsible(
                lambda: [call_widget(i, call) for i, call in enumerate(calls)],
                title=f"API calls ({len(calls)}{note})",
                collapsed=len(calls) > 3,
            )
        )
    elif not trace.calls_damaged:
        body.append(markup("[dim]no API calls recorded for this example[/]"))
    if trace.calls_damaged:  # "none recorded" would be a wrong answer: the trace is damaged
        body.append(markup(f"[$warning]{escape(trace.calls_damaged)}[/]"))
    shown = shown_label(trace)
    title = f"{name} → {shown or (UNREADABLE_MARKER if unreadable(trace) else 'no prediction')}"
    correct = shown == gold if trace.row and gold and shown is not None else None
    mark = "" if correct is None else " ✓" if correct else " ✗"
    section = Collapsible(*body, title=title + mark, collapsed=False, classes="pipeline-section")
    if kind and kind.trace_hint:
        section.tooltip = f"{kind.trace_hint} ({kind.endpoint or 'its method'})"
    return section


def preference_widgets(trace: PipelineTrace, gold: str | None) -> list[Widget]:
    """One preference call (prefer, prefer_check): both answers, the order shown, the verdict."""
    row = PreferenceRow.of(trace.row or {})
    first = "A" if row.order != "BA" else "B"
    widgets: list[Widget] = [markup(f"call {escape(str(row.call))} · Response 1 was answer {first}")]
    for name, text, label in (("A", row.answer_a, row.label_a), ("B", row.answer_b, row.label_b)):
        widgets.append(markup(f"[b]answer {name}[/b] [dim]({escape(str(label))})[/]"))
        widgets.append(plain(text))
    widgets.append(markup("[b]judge output[/b]" + (" [dim](after the repair request)[/]" if row.judge_used_retry else "")))
    widgets.append(plain(row.judge_raw))
    widgets.append(markup(
        f"verdict {escape(str(row.verdict))} → preferred [b]{escape(str(row.preferred or 'none'))}[/b]"
        + (f"   [dim]reason:[/] {escape(clip(str(row.reason)))}" if row.reason else "")
    ))
    return widgets


# How each kind's path to its label reads (the registry entry's `trace_view` names one).
TRACE_VIEWS = {
    "judge": judge_widgets, "mcq": mcq_widgets, "logprob": logprob_widgets, "stability": stability_widgets,
    "preference": preference_widgets,
}


def example_widgets(detail: TraceDetail) -> list[Widget]:
    example = detail.example
    widgets: list[Widget] = []
    if example is None:
        widgets.append(markup("[$warning]the dataset file of this session was not found: question and tools unknown[/]"))
        return widgets
    widgets.append(markup("[b]question[/b]"))
    widgets.append(plain(example.question))
    facts = [f"source {escape(example.source)}" if example.source else ""]
    if example.held_out_param:
        facts.append(f"held-out parameter [b]{escape(str(example.held_out_param))}[/b]")
    if example.target_tool:
        try:
            target = json.loads(example.target_tool).get("name")
        except (ValueError, AttributeError):
            target = None
        facts.append(f"target tool [b]{escape(str(target or example.target_tool)[:60])}[/b]")
    if any(facts):
        widgets.append(markup("[dim]" + "   ".join(f for f in facts if f) + "[/]"))
    tools = []
    for index, tool in enumerate(example.tools):
        try:
            schema = json.loads(tool)
        except ValueError:
            schema = tool
        name = schema.get("name") if isinstance(schema, dict) else None
        tools.append(
            LazyCollapsible(
                lambda schema=schema: [plain(pretty_json(schema))],
                title=f"tool {index + 1}: {name or '?'}",
                collapsed=True,
            )
        )
    widgets.append(Collapsible(*tools, title=f"tools ({len(tools)})", collapsed=len(tools) > 3) if tools else markup("[dim]no tools[/]"))
    answers = [
        markup(f"[b]{escape(name)}[/b]" + (" [$success]◀ gold[/]" if name == detail.gold else "")) for name in example.answers
    ]
    mixed: list[Widget] = []
    for header, text in zip(answers, example.answers.values()):
        mixed.extend([header, plain(text)])
    widgets.append(LazyCollapsible(lambda: mixed, title="candidate answers"))
    return widgets


def event_widgets(detail: TraceDetail) -> list[Widget]:
    if not detail.events:
        return [markup("[dim]no audit events for this example[/]")]
    lines = []
    for event in map(AuditEvent.of, detail.events):
        severity = str(event.severity or "")
        colour = {"error": "$error", "warning": "$warning"}.get(severity, "$text-muted")
        details = json.dumps(event.details or {}, ensure_ascii=False, default=str)
        lines.append(
            f"[{colour}]{escape(severity):<7}[/] [b]{escape(str(event.fallback_type))}[/b] "
            f"[dim]{escape(str(event.exp_name or ''))} · {escape(str(event.stage or ''))} · "
            f"{escape(str(event.ts_utc or ''))}[/]\n    {escape(details[:600])}"
        )
    return [markup("\n".join(lines))]


class TraceScreen(Screen):
    CSS_PATH = "trace.tcss"  # read when the screen is first shown, not before the first frame
    BINDINGS = [
        Binding("escape", "back", "Back", id="trace.back"),
        Binding("n", "step(1)", "Next", id="trace.next"),
        Binding("p", "step(-1)", "Previous", id="trace.previous"),
        Binding("a", "toggle_all", "Expand/collapse", id="trace.toggle_all"),
    ]

    def __init__(self, data: SessionData, uuid: str, uuids: list[str] | None = None, *, title: str = "") -> None:
        super().__init__()
        self.data = data
        self.uuid = uuid
        self.uuids = uuids or [uuid]
        self.title_prefix = title
        self._expanded = False

    def compose(self) -> ComposeResult:
        yield NavBar("sessions")
        yield Static(id="trace-title")
        yield VerticalScroll(id="trace-body")
        yield Footer()

    def on_mount(self) -> None:
        self.show_uuid(self.uuid)

    def show_uuid(self, uuid: str) -> None:
        self.uuid = uuid
        position = self.uuids.index(uuid) + 1 if uuid in self.uuids else 0
        info = self.data.info
        where = f"{position}/{len(self.uuids)}" if position else ""
        prefix = f"{escape(self.title_prefix)} · " if self.title_prefix else ""
        self.query_one("#trace-title", Static).update(
            Content.from_markup(
                f"{prefix}[b]{escape(uuid)}[/b]  [dim]{escape(info.target_model)} · {escape(info.fingerprint)} · {where}"
                f"   n/p: next/previous[/]"
            )
        )
        self.load_detail(uuid)

    @background(thread=True, group="trace")
    def load_detail(self, uuid: str) -> None:
        try:
            detail = self.data.trace(uuid)
        except Exception as exc:  # noqa: BLE001 - a file that cannot be read is said here, never a blank screen
            self.app.call_from_thread(self._show_problem, uuid, exc)
            return
        self.app.call_from_thread(self._show, detail)

    async def _show_problem(self, uuid: str, error: Exception) -> None:
        """The example's files could not be read: one line in the body, and the app's notification (and log)."""
        if uuid != self.uuid:
            return
        body = self.query_one("#trace-body", VerticalScroll)
        await body.remove_children()
        text = f"the files of {uuid} cannot be read: {type(error).__name__}: {error}"
        await body.mount(markup(f"[$error]{escape(text)}[/]", "trace-problem"))
        self.app.report_failure("trace", error)

    async def _show(self, detail: TraceDetail) -> None:
        if detail.uuid != self.uuid:
            return
        body = self.query_one("#trace-body", VerticalScroll)
        await body.remove_children()
        row = self.data.rows.row(detail.uuid)
        summary = [f"gold [b]{escape(detail.gold or '?')}[/b] ·"]
        for trace in detail.pipelines:
            said = short_verdict(shown_label(trace) if trace.row else None, detail.gold)
            summary.append(f"{escape(short_exp(trace.exp_name))} {said}")
        if row is not None and row.markers:
            summary.append(f"[$warning]{escape(' '.join(row.markers))}[/]")
        # Wrapped between pipelines: `S:mcq k2 T.0 dir ✗` is never cut from its ✗ at 80 columns.
        widgets: list[Widget] = [ItemLine(summary, classes="trace-summary")]
        widgets += example_widgets(detail)
        widgets += [pipeline_section(trace, detail.gold) for trace in detail.pipelines]
        widgets.append(Collapsible(*event_widgets(detail), title=f"audit events ({len(detail.events)})", collapsed=not detail.events))
        await body.mount_all(widgets)
        body.scroll_home(animate=False)

    def action_step(self, step: int) -> None:
        if self.uuid not in self.uuids:
            return
        index = self.uuids.index(self.uuid) + step
        if 0 <= index < len(self.uuids):
            self.show_uuid(self.uuids[index])
        else:
            self.notify("no more examples in this list", timeout=2)

    def action_toggle_all(self) -> None:
        self._expanded = not self._expanded
        for collapsible in self.query(Collapsible):
            collapsible.collapsed = not self._expanded

    def action_back(self) -> None:
        self.app.pop_screen()
