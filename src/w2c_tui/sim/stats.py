"""Counters of requests per path and faults per kind, served at /sim/stats."""

from __future__ import annotations

from collections import Counter
from typing import Any

from w2c_tui.sim.settings import FAULT_KINDS


class SimStats:
    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.capacity: Counter[str] = Counter()  # 429s of capacity mode, by cap

    def count_request(self, path: str) -> None:
        self.requests[path] += 1

    def count_fault(self, kind: str) -> None:
        self.faults[kind] += 1

    def count_capacity(self, cap: str) -> None:
        self.capacity[cap] += 1

    def reset(self) -> None:
        self.requests.clear()
        self.faults.clear()
        self.capacity.clear()

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": dict(sorted(self.requests.items())),
            "requests_total": sum(self.requests.values()),
            "faults": {kind: self.faults.get(kind, 0) for kind in FAULT_KINDS},
            "faults_total": sum(self.faults.values()),
            "capacity_refusals": dict(sorted(self.capacity.items())),
            "capacity_refusals_total": sum(self.capacity.values()),
        }
