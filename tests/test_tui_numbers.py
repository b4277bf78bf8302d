"""Numbers the screens once got wrong (issue 27, item 5): the judge-check estimate, the Setup estimate
of a run key that a resume will mostly skip, exports without the stability metrics `show` prints, and
a standalone `w2c-tui sim` used as a provider not marked simulated."""

from __future__ import annotations

import asyncio
import re

from w2c_tui.analysis.export import summary_records
from w2c_tui.config import load_config
from w2c_tui.config.schema import Settings
from w2c_tui.engine.estimate import estimate, plan_estimate
from w2c_tui.engine.launch import Launch
from w2c_tui.judge_check.launch import JudgeCheckLaunch
from w2c_tui.session.reader import read_session
from w2c_tui.session.simulated import is_simulator
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.screens.setup.estimate import estimate_markup

from configs import write_config


def test_the_judge_check_estimate_counts_its_tokens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    launch = JudgeCheckLaunch(load_config(None, environ={}))
    plan = launch.plans[0]
    found = plan_estimate(launch.loaded.settings, plan)
    items = len(plan.examples)  # one judge request per reference answer
    assert found["requests"] == items
    assert found["completion_tokens"] == 25 * items  # the judge's JSON label, typically
    assert found["prompt_tokens"] > 100 * items  # the judge prompt holds the question, tools and the answer


def requests_line(markup: str) -> str:
    return re.sub(r"\[/?[^\]]*\]", "", markup.splitlines()[1])


def test_the_setup_estimate_leaves_out_what_a_resume_skips():
    settings = Settings.model_validate(
        {"models": {"target_model": ["a", "b"]}, "pipelines": {"do_llm_judge": False, "do_mcq": True, "do_mcq_logprob": False}}
    )
    # Hand count: 100 examples, mcq only, 1 request each: 100 per model, 200 for two models.
    assert estimate(settings, 100).requests == {"mcq": 100}
    assert "≈ 200 requests" in requests_line(estimate_markup(settings, 100, None))
    # Model a's session is complete on disk, b's holds 40 of 100: 0 + 60 requests are left.
    left = estimate_markup(settings, 100, None, {"a": {"mcq": 100}, "b": {"mcq": 40}})
    assert "≈ 60 requests" in requests_line(left)
    assert "resumes 70% on disk" in re.sub(r"\[/?[^\]]*\]", "", left.splitlines()[0])  # (100 + 40) / 200
    # Every session complete: the launch makes no request, and the estimate says so.
    done = estimate_markup(settings, 100, None, {"a": {"mcq": 100}, "b": {"mcq": 100}})
    assert "≈ 0 requests" in requests_line(done)


def test_exports_carry_the_stability_metrics(tmp_path):
    workdir = tmp_path / "workdir"
    root = write_session(workdir, n_examples=12, stability_k=3).root
    info = read_session(root)
    records = summary_records([info])
    sweep = next(r for r in records if r["pipeline"].startswith("stability_"))
    metrics = next(p.metrics for p in info.pipelines if p.exp_name == sweep["pipeline"])
    assert sweep["k"] == 3
    assert sweep["stability_at_k"] == metrics["stability_at_k"] and sweep["mean_flip_rate"] == metrics["mean_flip_rate"]
    plain = next(r for r in records if r["pipeline"] == "mcq")
    assert plain["stability_at_k"] is None


def test_a_standalone_sim_as_a_provider_is_marked_simulated(sim, tmp_path):
    assert is_simulator({"system_fingerprint": "w2c-tui-sim"}) and is_simulator({}, {"x-w2c-sim": "simulated"})
    assert not is_simulator({"system_fingerprint": "fp_abc", "server": "uvicorn"}, {"server": "uvicorn"})
    config = write_config(tmp_path, sim.base_url, data={"n_per_label": 1}, mlflow={"enabled": False})
    launcher = Launch(load_config(config, environ={}), run_key="standalone", only=["mcq"])
    assert not launcher.simulated  # a provider like any other, as far as the config says
    [outcome] = asyncio.run(launcher.run())
    assert outcome.state.simulated  # the Monitor's SIMULATED badge
    assert read_session(outcome.plan.paths.root).simulated  # Sessions, show, exports
