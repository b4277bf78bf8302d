"""Shared fixtures: the simulated endpoint as a real `w2c-tui sim` process on loopback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from typing import Iterator

import httpx
import pytest

BANNER_URL = re.compile(r"(http://127\.0\.0\.1:\d+/v1)")


class SimProcess:
    def __init__(self, *args: str) -> None:
        command = [sys.executable, "-m", "w2c_tui", "sim", "--port", "0", *args]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            match = BANNER_URL.search(line)
            if match:
                self.base_url = match.group(1)
                self.banner = line
                return
            if self.process.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"w2c-tui sim did not start: {line!r} {self.process.stderr.read()[:2000]}")

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")

    def stats(self) -> dict:
        return httpx.get(f"{self.root}/sim/stats", timeout=10).json()

    def reset(self) -> None:
        httpx.post(f"{self.root}/sim/reset", timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture(scope="session")
def sim() -> Iterator[SimProcess]:
    server = SimProcess("--seed", "7")
    yield server
    server.stop()


@pytest.fixture
def make_sim():
    """Start extra sims with their own options (faults, latency); stopped after the test."""
    started: list[SimProcess] = []

    def start(*args: str) -> SimProcess:
        server = SimProcess(*args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(autouse=True)
def _no_user_environment(monkeypatch):
    """Tests never pick up a developer's RUN_KEY or tokens."""
    for name in list(os.environ):
        if name == "RUN_KEY" or name.startswith("TOKEN_"):
            monkeypatch.delenv(name, raising=False)
