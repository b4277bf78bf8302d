"""Run one session: resume from checkpoints, run its pipelines concurrently, write metrics."""

from __future__ import annotations

import asyncio
import traceback

from w2c_tui.api import ApiClient, MissingTokenError, PermanentApiError, RetriesExhaustedError
from w2c_tui.api.bad_response import BadResponse
from w2c_tui.api.logprob import LogprobFindings
from w2c_tui.config import LoadedConfig
from w2c_tui.data import Example
from w2c_tui.engine.finalize import (
    audit_label_conflicts,
    metrics_for,
    metrics_stale,
    unusable_judge,
    unusable_labels,
    write_session_summary,
    write_summaries,
)
from w2c_tui.engine.plan import SessionPlan
from w2c_tui.engine.state import PipelineProgress, RunState
from w2c_tui.engine.pacing import record_pacing
from w2c_tui.engine.usage_report import pipeline_usage, usage_before_launch
from w2c_tui.pipelines.base import Pipeline, ServerCannotRun
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.pipelines import pipeline_class
from w2c_tui.redaction import Redactor
from w2c_tui.status import CANCELLED, COMPLETE, FAILED, PARTIAL, RUNNING
from w2c_tui.session import kinds
from w2c_tui.store.audit import AuditLog
from w2c_tui.store.jsonl import StorageError
from w2c_tui.store.usage import UsageBook
from w2c_tui.session.models import DoneMarker
from w2c_tui.store.session import is_done, mark_done

# Errors after which no further example of the pipeline can succeed.
FATAL_STATUSES = {401, 403, 404}


# Failure causes that are the server's answer to the request itself, not a passing condition.
REFUSALS = {"permanent_error", "bad_response"}


class FatalPipelineError(RuntimeError):
    pass


class SessionRunner:
    def __init__(
        self,
        loaded: LoadedConfig,
        plan: SessionPlan,
        client: ApiClient,
        state: RunState,
        redactor: Redactor,
        *,
        workers: int = 16,
        audit_logs: dict[str, AuditLog] | None = None,
    ) -> None:
        self.loaded = loaded
        self.plan = plan
        self.client = client
        self.state = state
        self.redactor = redactor
        self.workers = max(1, workers)
        self.capabilities = LogprobFindings()
        self.audit_logs = {} if audit_logs is None else audit_logs  # shared with whoever reports per exp_name
        self._tasks: list[asyncio.Task] = []
        self._usage_before: dict[str, UsageBook | None] = {}  # exp_name -> its earlier launches' usage

    def _context(self, exp_name: str) -> PipelineContext:
        settings = self.loaded.settings
        audit = AuditLog.of_pipeline(self.plan.paths, exp_name, settings.run.api_seed, self.state.add_event)
        self.audit_logs[exp_name] = audit
        return PipelineContext(
            exp_name=exp_name,
            paths=self.plan.paths,
            client=self.client,
            settings=settings,
            target_model=self.plan.target_model,
            family=self.plan.family,
            audit=audit,
            state=self.state,
            capabilities=self.capabilities,
        )

    def pipelines(self) -> list[Pipeline]:
        built: list[Pipeline] = [
            pipeline_class(kinds.get(name))(self._context(name)) for name in self.plan.pipelines
        ]
        sweep_class = pipeline_class(kinds.SWEEP)
        for sweep in self.plan.sweeps:
            built.append(sweep_class(self._context(sweep.exp_name), sweep.method, sweep.k, sweep.temperature))
        return built

    async def run(self) -> dict[str, str]:
        """Run every pipeline; returns exp_name -> status (w2c_tui.status: complete, partial, cancelled, failed)."""
        pipelines = self.pipelines()
        for pipeline in pipelines:
            self.state.pipeline(pipeline.exp_name).total = len(self.plan.examples)
        self._tasks = [asyncio.create_task(self._run_pipeline(p), name=p.exp_name) for p in pipelines]
        results = await asyncio.gather(*self._tasks, return_exceptions=True)
        statuses = {}
        for pipeline, result in zip(pipelines, results):
            progress = self.state.pipeline(pipeline.exp_name)
            if isinstance(result, BaseException):
                progress.status = CANCELLED if isinstance(result, asyncio.CancelledError) else FAILED
                progress.message = progress.message or self.redactor.text(str(result))
            statuses[pipeline.exp_name] = progress.status
        await asyncio.to_thread(write_session_summary, self.plan.paths)  # what `sessions` lists, without the rows
        return statuses

    def cancel(self) -> None:
        """Stop sending; rows already written stay, and a resume continues from them."""
        for task in self._tasks:
            task.cancel()

    async def _run_pipeline(self, pipeline: Pipeline) -> None:
        ctx = pipeline.ctx
        progress = self.state.pipeline(pipeline.exp_name)
        examples = self.plan.examples
        try:
            finished = {u: r for u, r in pipeline.finished_rows().items() if pipeline.settled(r)}
            for example in examples:
                row = finished.get(example.uuid)
                if row is not None:
                    progress.record(example.correct_answer, pipeline.label_of(row), resumed=True)
            pending = [e for e in examples if e.uuid not in finished]
            wanted = {e.uuid for e in examples}
            planned_rows = {u: r for u, r in finished.items() if u in wanted}
            if (
                not pending
                and is_done(self.plan.paths, pipeline.exp_name)
                and not metrics_stale(
                    self.plan.paths, pipeline.exp_name, planned_rows, pipeline.label_of,
                    self.loaded.settings.pipelines.judge_unreadable_as,
                )
            ):
                progress.status = COMPLETE
                return
            progress.status = RUNNING
            progress.started_at = progress.clock()
            # Before anything of this launch can call: the trace then holds only earlier launches' calls.
            self._usage_before[pipeline.exp_name] = await asyncio.to_thread(usage_before_launch, self.plan.paths, pipeline.exp_name)
            pipeline.prepare(pending)
            await self._work(pipeline, pending, progress)
            if progress.failed and progress.done == progress.resumed and set(progress.failure_causes) <= REFUSALS:
                # Not one answer, and every request refused outright: a resume would be refused again.
                raise FatalPipelineError(f"every request was refused; the last: {progress.last_failure}")
        except FatalPipelineError as exc:
            self._stopped(pipeline, progress, str(exc))
        except asyncio.CancelledError:
            progress.status = CANCELLED
        except StorageError as exc:  # the disk, not the run: rows so far are whole, a resume continues
            self._stopped(pipeline, progress, self.redactor.text(exc.advice(self.plan.paths.run_key)), stage="checkpoint")
        except Exception as exc:  # a bug of ours: the rows so far stay and are finalized; say what broke
            self._stopped(
                pipeline,
                progress,
                self.redactor.text(f"internal error (please report it): {type(exc).__name__}: {exc}"),
                traceback=self.redactor.text("".join(traceback.format_exception(exc)))[-4000:],
            )
        finally:
            pipeline.close()
            progress.finished_at = progress.clock()
        try:
            # Shielded: a cancel (quit) during this last step must not leave rows without metrics.json.
            finalizing = asyncio.ensure_future(asyncio.to_thread(self._finalize, pipeline, progress))
            try:
                await asyncio.shield(finalizing)
            except asyncio.CancelledError:
                await finalizing
        except StorageError as exc:  # metrics.json cannot be written: the rows are, show rebuilds from them
            progress.status = FAILED
            progress.message = progress.message or self.redactor.text(exc.advice(self.plan.paths.run_key))
        ctx.audit.close()

    def _stopped(
        self, pipeline: Pipeline, progress: PipelineProgress, message: str, *, stage: str = "request", **details: str
    ) -> None:
        """The pipeline stopped before its end (a fatal answer, the disk, a bug of ours): failed, with
        `message` (already redacted) on its line and once in its audit log."""
        progress.status = FAILED
        progress.message = message
        pipeline.ctx.audit.emit(
            "pipeline_stopped_fatal_error",
            stage=stage,
            severity="error",
            details={"error": message[:500], **details, "examples_left": len(self.plan.examples) - progress.done},
        )

    async def _work(self, pipeline: Pipeline, pending: list[Example], progress: PipelineProgress) -> None:
        queue: asyncio.Queue[Example] = asyncio.Queue()
        for example in pending:
            queue.put_nowait(example)

        async def worker() -> None:
            while True:
                try:
                    example = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                await self._evaluate(pipeline, example, progress)

        tasks = [asyncio.create_task(worker()) for _ in range(min(self.workers, len(pending)))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _evaluate(self, pipeline: Pipeline, example: Example, progress: PipelineProgress) -> None:
        try:
            row = await pipeline.evaluate(example)
        except (MissingTokenError, ServerCannotRun) as exc:
            raise FatalPipelineError(self.redactor.text(str(exc))) from None
        except BadResponse as exc:  # the provider's answer could not be read; anything else is our bug
            kind = getattr(exc, "kind", "unreadable")
            message = self.redactor.text(str(exc))
            self.state.on_bad_answer(kind, message)
            self._record_failure(pipeline, example, progress, "bad_response", message, kind=kind)
            return
        except PermanentApiError as exc:
            message = self.redactor.text(str(exc))
            if getattr(exc, "status", None) in FATAL_STATUSES:
                raise FatalPipelineError(message) from None
            self._record_failure(pipeline, example, progress, "permanent_error", message)
            return
        except RetriesExhaustedError as exc:
            self._record_failure(pipeline, example, progress, getattr(exc, "cause", "retries"), self.redactor.text(str(exc)))
            return
        progress.record(example.correct_answer, pipeline.label_of(row))

    def _record_failure(
        self, pipeline: Pipeline, example: Example, progress: PipelineProgress, cause: str, message: str, kind: str | None = None
    ) -> None:
        """No prediction could be obtained: say so, keep going; a resume retries it."""
        progress.failed += 1
        progress.failure_causes[cause] += 1
        progress.last_failure = message
        details = {"cause": cause, "error": message[:500]}
        if kind is not None:
            details["kind"] = kind  # which sort of unreadable answer (html, redirect, not_object, ...)
        pipeline.ctx.audit.emit(
            "api_call_failed_example_skipped",
            uuid=example.uuid,
            stage="request",
            severity="error",
            details=details,
        )

    def _finalize(self, pipeline: Pipeline, progress: PipelineProgress) -> None:
        """metrics.json and audit summary from disk; _DONE.json when every UUID has a row."""
        paths = self.plan.paths
        rows = pipeline.finished_rows()
        wanted = {e.uuid for e in self.plan.examples}
        primary = paths.checkpoint_file(pipeline.exp_name, pipeline.primary_file)
        audit_label_conflicts(primary, pipeline.label_of, pipeline.ctx.audit, pipeline.settled)
        # Every row written, but none final (a judge none of whose replies could be read): a
        # resume asks them all again, so the pipeline is not complete.
        complete = wanted <= rows.keys() and (not wanted or any(pipeline.settled(rows[u]) for u in wanted))
        metrics = metrics_for(
            pipeline.exp_name,
            rows,
            self.plan.examples,
            pipeline.label_of,
            pipeline.ctx.audit,
            seed=self.loaded.settings.run.api_seed,
            unreadable_as=self.loaded.settings.pipelines.judge_unreadable_as,
        )
        own = {u: r for u, r in rows.items() if u in wanted}
        progress.forced_labels = unusable_labels(pipeline.exp_name, own)
        unusable = unusable_judge(pipeline.exp_name, own, pipeline.ctx.judge_model)
        if unusable is not None:  # every row written, none usable: not complete, and a resume alone cannot help
            complete = False
            progress.status = FAILED
            progress.message = self.redactor.text(unusable)
            pipeline.ctx.audit.emit("judge_unusable_pipeline_failed", stage="finalize", severity="error", details={"error": progress.message[:500]})
        elif complete:
            progress.status = COMPLETE
        elif progress.status == RUNNING:
            progress.status = PARTIAL
        metrics["complete"] = complete
        metrics["status"] = progress.status  # so readers tell cancelled and failed from partial
        ran = progress.finished_at - progress.started_at if progress.started_at and progress.finished_at else None
        book = self._usage_before.pop(pipeline.exp_name, None)  # earlier launches', plus this one's below
        if book is not None:
            book.merge(self.state.usage.book(pipeline.exp_name))
        metrics.update(pipeline_usage(paths, pipeline.exp_name, self.loaded.settings, ran, book=book))
        metrics["pacing"] = record_pacing(pipeline.ctx.audit, self.client.pacing())
        write_summaries(paths, pipeline.exp_name, metrics, set(rows) & wanted)
        if complete and not is_done(paths, pipeline.exp_name):
            mark_done(paths, pipeline.exp_name, DoneMarker.written({"n_examples": len(wanted), "fingerprint": self.plan.fingerprint}))
