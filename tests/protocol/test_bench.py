"""bench/validate.py keeps working (a smoke run with a tiny time budget)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "validate.py"


def test_the_validate_benchmark_prints_a_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("bench_validate", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", ["validate.py", "--seconds", "0.001"])
    module.main()
    out = capsys.readouterr().out
    assert "seeds/000_tensorflow_distributed.json" in out
    assert "all examples, round robin" in out
