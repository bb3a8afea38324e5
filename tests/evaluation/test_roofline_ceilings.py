"""The roofline's ceilings are measured once and cached (issue 36): the probe holds 256 MiB on the CPU, and a
candidate that only comes near the floor measures them again at most once an hour, while one about to be flagged
always does. Real files and the real cache; only the probe itself is counted instead of run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

from htam_agent.evaluation.checker import roofline


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Each measurement's bandwidth, rising, so a re-measurement shows in the result."""
    made: list[float] = []

    def measure(device: torch.device) -> dict[str, float]:
        made.append(1e9 * (len(made) + 1))
        return {"bandwidth_Bps": made[-1], "fp32_flops": 1e12}

    monkeypatch.setattr(roofline, "_measure", measure)
    return made


def test_near_the_floor_the_ceilings_are_measured_again_at_most_hourly(tmp_path: Path, probes: list[float]) -> None:
    cpu = torch.device("cpu")
    first = roofline.ceilings(cpu, "cpu x", str(tmp_path))
    assert probes == [1e9] and first["bandwidth_Bps"] == 1e9
    near = roofline.ceilings(cpu, "cpu x", str(tmp_path), refresh=True, max_age_s=roofline.REFRESH_AFTER_S)
    assert probes == [1e9] and near == first  # measured seconds ago: the cached ones stand
    accused = roofline.ceilings(cpu, "cpu x", str(tmp_path), refresh=True)  # before a rejection: always
    assert probes == [1e9, 2e9] and accused["bandwidth_Bps"] == 2e9
    (path,) = tmp_path.glob("ceilings_*.json")
    cached = json.loads(path.read_text())
    cached["measured_at"] = time.time() - roofline.REFRESH_AFTER_S - 1  # an hour later
    path.write_text(json.dumps(cached))
    later = roofline.ceilings(cpu, "cpu x", str(tmp_path), refresh=True, max_age_s=roofline.REFRESH_AFTER_S)
    assert probes == [1e9, 2e9, 3e9] and later["bandwidth_Bps"] == 3e9
    assert set(later) == set(roofline.CEILINGS)


def test_a_cache_written_before_its_time_was_kept_is_measured_again_once(tmp_path: Path, probes: list[float]) -> None:
    cpu = torch.device("cpu")
    safe = "".join(c if c.isalnum() else "_" for c in f"cpu y_{torch.__version__}")
    (tmp_path / f"ceilings_{safe}.json").write_text(json.dumps({"bandwidth_Bps": 5e9, "fp32_flops": 2e12}))
    assert roofline.ceilings(cpu, "cpu y", str(tmp_path))["bandwidth_Bps"] == 5e9 and probes == []
    kept = roofline.ceilings(cpu, "cpu y", str(tmp_path), refresh=True, max_age_s=roofline.REFRESH_AFTER_S)
    assert probes == [1e9] and kept == {"bandwidth_Bps": 5e9, "fp32_flops": 2e12}  # the best of old and new
    roofline.ceilings(cpu, "cpu y", str(tmp_path), refresh=True, max_age_s=roofline.REFRESH_AFTER_S)
    assert probes == [1e9]
