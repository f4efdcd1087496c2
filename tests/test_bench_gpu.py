"""Smoke check of benchmarks/bench_gpu.py in its quick mode on PyTorch's CPU device, so that the script
waiting for a GPU cannot rot: every case it runs reports the default fit, the fit with the device's
float noise (the cost of the host's exact noise), the fit with OS entropy ("secure") and the limit, and
the table has their columns."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def test_quick_run_reports_the_exact_noise_cost(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out, lines = tmp_path / "table.md", tmp_path / "lines.jsonl"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--quick", "--device", "cpu",
                    "--dtypes", "float64", "--no-cpu", "--repeats", "1", "--out", str(out),
                    "--json", str(lines)], check=True, env=env, capture_output=True, text=True, timeout=600)
    rows = [json.loads(line) for line in lines.read_text().splitlines()]
    ran = {(r["case"], r["n"], r["d"]) for r in rows if r["what"] == "dppca"}
    assert len(ran) >= 3  # the synthetic and streamed cases run without data files
    for key in ran:
        by_what = {r["what"]: r for r in rows if (r["case"], r.get("n"), r.get("d")) == key}
        fit, flt = by_what["dppca"], by_what["dppca_float_noise"]
        assert fit["median_s"] > 0 and flt["median_s"] > 0 and by_what["limit"]["median_s"] > 0
        assert flt["exact_noise_cost_s"] == pytest.approx(fit["median_s"] - flt["median_s"])
        assert by_what["dppca_secure"]["median_s"] > 0 and by_what["dppca_secure"]["noise_source"] == "secure"
        assert fit["energy_ratio"] > 0.2  # not random (a random 10-dim subspace: about 0.03 on MNIST)
    table = out.read_text()
    assert "DPPCA, device float noise" in table and "DPPCA, secure" in table
    assert table.count("\n| ") >= len(ran) + 1
