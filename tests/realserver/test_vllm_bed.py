"""The vLLM bed's guard: a missing bed fails, and under CI it fails even when skipping is asked for."""

from __future__ import annotations

import pytest

from . import vllm_bed
from .conftest import SKIP_ENV, require_vllm_bed


def test_a_missing_bed_fails_and_skips_only_outside_ci(monkeypatch):
    monkeypatch.setattr(vllm_bed, "missing", lambda: ["the vLLM venv /x is missing or unfinished"])
    monkeypatch.delenv(SKIP_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.fail.Exception, match="make test"):
        require_vllm_bed()
    monkeypatch.setenv(SKIP_ENV, "1")
    with pytest.raises(pytest.skip.Exception):
        require_vllm_bed()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="/x is missing"):
        require_vllm_bed()


def test_the_version_url_is_at_the_server_root():
    from w2c_tui.api.server_version import version_url

    assert version_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/version"
    assert version_url("https://gw.example/llm/v1/?api-version=1") == "https://gw.example/llm/version"
