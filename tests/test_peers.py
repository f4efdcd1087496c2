"""The peer benchmark's runner (benchmarks/peers): parsing, timeouts, crashes, unavailable peers, --quick.

Fake peers are tiny Python scripts written to a temporary folder: one prints canned JSON (among other
output), one sleeps past the timeout, one crashes. No peer library is installed here and nothing is
downloaded.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import pytest

# The peer benchmark is a script of the checkout (benchmarks/bench_peers.py), not a subcommand.
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from peers import bench, runner  # noqa: E402

main = bench.main
MARK = runner.RESULT_MARKER

CANNED = {
    "components": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
    "fit_seconds": 0.25,
    "vmhwm_mib": 12.5,
    "versions": {"fake": "1.0"},
    "privacy": {"notion": "pure", "epsilon": 1.0, "delta": 0.0},
}


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("import json, os, sys, time\n" + body)
    return path


# ----------------------------------------------------------------------------------------------
# parse_worker_output (pure)
# ----------------------------------------------------------------------------------------------


def test_parse_ok_takes_the_last_result_line_and_ignores_other_output():
    stale = dict(CANNED, fit_seconds=9.0)
    out = f"library chatter\n{MARK} {json.dumps(stale)}\nmore chatter\n{MARK} {json.dumps(CANNED)}\n"
    o = runner.parse_worker_output(out, "a warning\n", 0, wall_seconds=1.5)
    assert o.ok and o.status == "ok" and o.message == ""
    assert o.result["fit_seconds"] == 0.25 and o.result["components"] == CANNED["components"]
    assert o.wall_seconds == 1.5 and o.returncode == 0


@pytest.mark.parametrize(
    ("stdout", "needle"),
    [
        ("nothing useful\n", "no result line"),
        (f"{MARK} {{not json\n", "not JSON"),
        (f"{MARK} [1, 2]\n", "not a JSON object"),
        (f"{MARK} " + json.dumps({"fit_seconds": 1.0}) + "\n", "components"),
        (f"{MARK} " + json.dumps({"components": [[1.0, 0.0], [0.0]], "fit_seconds": 1.0}) + "\n", "differ"),
        (f"{MARK} " + json.dumps({"components": [[1.0, "x"]], "fit_seconds": 1.0}) + "\n", "non-numeric"),
        (f"{MARK} " + '{"components": [[1.0, NaN]], "fit_seconds": 1.0}' + "\n", "non-finite"),
        (f"{MARK} " + json.dumps({"components": [[1.0, 0.0]], "fit_seconds": -1}) + "\n", "fit_seconds"),
        (f"{MARK} " + json.dumps({"components": [[1.0, 0.0]]}) + "\n", "fit_seconds"),
    ],
)
def test_parse_invalid_results(stdout, needle):
    o = runner.parse_worker_output(stdout, "", 0)
    assert o.status == "invalid" and not o.ok and o.result is None
    assert needle in o.message


def test_parse_crash_reports_last_stderr_line_even_with_a_result_line():
    err = "Traceback (most recent call last):\n  File 'x', line 1\nValueError: boom\n\n"
    o = runner.parse_worker_output(f"{MARK} {json.dumps(CANNED)}\n", err, 3)
    assert o.status == "crashed" and o.returncode == 3
    assert o.message == "exit status 3: ValueError: boom"
    assert "ValueError: boom" in o.stderr_tail
    assert runner.parse_worker_output("", "", -9).message == "exit status -9: exit status -9"


def test_parse_timeout():
    o = runner.parse_worker_output("partial", "", None, timeout=2.5, wall_seconds=2.6)
    assert o.status == "timeout" and o.returncode is None and "2.5 s" in o.message


# ----------------------------------------------------------------------------------------------
# run_worker with fake peers
# ----------------------------------------------------------------------------------------------


def test_fake_peer_prints_canned_json(tmp_path):
    fake = _script(
        tmp_path,
        "fake_ok.py",
        (
            "args = json.loads(sys.argv[1])\n"
            "print('hello from the library')\n"
            "print('warning', file=sys.stderr)\n"
            f"res = {CANNED!r}\n"
            "res['echo'] = args\n"
            f"print({MARK!r} + ' ' + json.dumps(res))\n"
        ),
    )
    o = runner.run_worker(sys.executable, fake, {"k": 2, "epsilon": 0.5}, timeout=60)
    assert o.ok, o.message
    assert o.result["echo"] == {"k": 2, "epsilon": 0.5}  # the arguments arrive as one JSON argument
    assert o.result["components"] == CANNED["components"] and o.wall_seconds > 0


def test_fake_peer_that_sleeps_is_killed_at_the_timeout(tmp_path):
    pidfile = tmp_path / "pids.json"
    fake = _script(
        tmp_path,
        "fake_sleep.py",
        (
            "import subprocess\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            f"open({str(pidfile)!r}, 'w').write(json.dumps([os.getpid(), child.pid]))\n"
            "print('started', flush=True)\n"
            "time.sleep(120)\n"
        ),
    )
    t0 = time.perf_counter()
    o = runner.run_worker(sys.executable, fake, {}, timeout=3)
    elapsed = time.perf_counter() - t0
    assert o.status == "timeout" and o.returncode is None and not o.ok
    assert "did not finish after 3 s" in o.message
    assert elapsed < 60  # not waited on for the 120 s it asked for
    pids = json.loads(pidfile.read_text())
    deadline = time.time() + 10
    while time.time() < deadline and any(_running(p) for p in pids):
        time.sleep(0.1)
    assert not any(_running(p) for p in pids), "the worker or its child survived the timeout"


def test_interrupting_the_parent_kills_the_worker(tmp_path, monkeypatch):
    import subprocess

    pidfile = tmp_path / "pid"
    fake = _script(
        tmp_path, "fake_sleep.py", f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"
    )
    real = subprocess.Popen.communicate

    def interrupted(self: Any, input: Any = None, timeout: Any = None) -> Any:
        if timeout is None:
            return real(self, input)
        deadline = time.time() + 30
        while not pidfile.exists() and time.time() < deadline:
            time.sleep(0.05)
        raise KeyboardInterrupt  # Ctrl-C while waiting for the worker

    monkeypatch.setattr(subprocess.Popen, "communicate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.run_worker(sys.executable, fake, {}, timeout=60)
    pid = int(pidfile.read_text())
    deadline = time.time() + 10
    while time.time() < deadline and _running(pid):
        time.sleep(0.1)
    assert not _running(pid)


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_fake_peer_that_crashes(tmp_path):
    fake = _script(tmp_path, "fake_crash.py", "print('about to fail')\nraise RuntimeError('peer exploded')\n")
    o = runner.run_worker(sys.executable, fake, {}, timeout=60)
    assert o.status == "crashed" and o.returncode == 1
    assert o.message.endswith("RuntimeError: peer exploded")


def test_missing_interpreter_is_a_crash_not_an_exception(tmp_path):
    o = runner.run_worker(tmp_path / "no-python", tmp_path / "x.py", {}, timeout=5)
    assert o.status == "crashed" and "could not start" in o.message


# ----------------------------------------------------------------------------------------------
# peer environments
# ----------------------------------------------------------------------------------------------


def test_peer_env_unavailable_when_the_venv_cannot_be_created(tmp_path):
    spec = runner.PeerSpec("fake", ("fakepkg==1.0",), ("fakepkg",), ("fakepkg",), "fake.py")
    env = runner.ensure_peer_env(spec, tmp_path, python=str(tmp_path / "no-such-python"))
    assert not env.available and env.python is None
    assert env.reason.startswith("unavailable: ")


def test_peer_env_unavailable_when_the_import_probe_fails(tmp_path):
    # "pip" is already installed in a fresh venv, so pip does not consult the package index.
    spec = runner.PeerSpec("fake", ("pip",), ("no_such_module_for_dpspectral_tests",), ("pip",), "fake.py")
    env = runner.ensure_peer_env(spec, tmp_path, install_timeout=300)
    assert not env.available
    assert env.reason.startswith("unavailable: import probe failed") and "ModuleNotFoundError" in env.reason
    assert not (tmp_path / "fake" / "dpspectral-peer.json").exists()  # not marked as reusable


def test_default_peer_dir_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert runner.default_peer_dir() == tmp_path / "dpspectral" / "peers"


# ----------------------------------------------------------------------------------------------
# the benchmark with fake / unavailable / no peers
# ----------------------------------------------------------------------------------------------


def _only_default_method(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "_own_methods", lambda: [("analyze_gauss", "approximate")])


def _runs(out: Path) -> list[dict[str, Any]]:
    from dpspectral_reproduce.report import read_runs

    return read_runs(out / "runs.csv")


def test_bench_records_unavailable_peers(monkeypatch, tmp_path, capsys):
    _only_default_method(monkeypatch)

    def unavailable(spec: Any, *args: Any, **kwargs: Any) -> Any:
        return runner.PeerEnv(spec.name, False, reason="unavailable: pip install failed: no network")

    monkeypatch.setattr(bench, "ensure_peer_env", unavailable)
    out = tmp_path / "b"
    rc = main(
        [
            "--quick",
            "--datasets",
            "digits",
            "--epsilons",
            "1",
            "--peers",
            "diffprivlib",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    rows = _runs(out)
    peer_rows = [r for r in rows if r["kind"] == "peer"]
    assert peer_rows and all(r["status"] == "unavailable" for r in peer_rows)
    assert all("no network" in r["message"] for r in peer_rows)
    ours = [r for r in rows if r["method"].startswith("dpspectral analyze_gauss")]
    assert ours and all(r["status"] == "ok" and 0 < r["captured_energy"] <= 1 for r in ours)
    report = (out / "report.md").read_text()
    assert "unavailable: pip install failed: no network" in report
    config = json.loads((out / "config.json").read_text())
    assert config["peers"]["diffprivlib"]["available"] is False
    assert "peer diffprivlib: unavailable" in capsys.readouterr().out


def test_bench_with_a_fake_peer_that_stalls_then_skips_larger_epsilons(monkeypatch, tmp_path):
    _only_default_method(monkeypatch)
    stall = _script(tmp_path, "stall.py", "time.sleep(120)\n")
    spec = runner.PeerSpec("fakepeer", (), (), (), str(stall))
    monkeypatch.setitem(bench.PEERS, "fakepeer", spec)
    monkeypatch.setattr(
        bench, "ensure_peer_env", lambda s, *a, **k: runner.PeerEnv(s.name, True, python=Path(sys.executable))
    )
    cfg = bench.BenchConfig(
        out=tmp_path / "b",
        datasets=("digits",),
        epsilons=(0.5, 1.0),
        repeats=2,
        timeout=2.0,
        peers=("fakepeer",),
        variants=("shipped",),
        quick=True,
    )
    result = bench.run_benchmark(cfg, log=lambda s: None)
    fake = [r for r in result["runs"] if r["method"] == "fakepeer (shipped)"]
    assert [(r["epsilon"], r["repeat"], r["status"]) for r in fake] == [
        (0.5, 0, "timeout"),
        (1.0, 0, "skipped"),
        (0.5, 1, "skipped"),
        (1.0, 1, "skipped"),
    ]
    assert "timed out at ε = 0.5" in fake[1]["message"]
    util = result["targets"]["utility"]
    assert util and all(u["verdict"].startswith("no peer result") for u in util)
    assert (tmp_path / "b" / "report.md").exists() and (tmp_path / "b" / "time.png").exists()


def test_bench_quick_without_peers(tmp_path, capsys):
    out = tmp_path / "quick"
    rc = main(["--quick", "--peers", "none", "--epsilons", "1", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    rows = _runs(out)
    assert {r["dataset"] for r in rows} == {"digits", "synthetic"}
    assert not any(r["kind"] == "peer" for r in rows)
    ours = [r for r in rows if r["method"].startswith("dpspectral analyze_gauss")]
    assert len(ours) == 2 and all(r["status"] == "ok" for r in ours)
    assert all(r["reported_delta"] == 1e-6 and r["relation"] == "replace_one" for r in ours)
    skl = [r for r in rows if r["kind"] == "sklearn"]
    assert len(skl) == 2 and all(r["status"] == "ok" and r["fit_s"] > 0 for r in skl)
    exact = [r for r in rows if r["kind"] == "reference"]
    assert all(math.isclose(r["captured_energy"], 1.0) for r in exact)
    for name in (
        "summary.csv",
        "config.json",
        "report.md",
        "utility_digits.png",
        "utility_synthetic.png",
        "time.png",
    ):
        assert (out / name).exists(), name
    report = (out / "report.md").read_text()
    assert "none (peers disabled)" in report and "approximate" in report
    printed = capsys.readouterr().out
    assert "wall time vs scikit-learn on digits" in printed


def test_bench_bad_options_exit_2(tmp_path, capsys):
    assert main(["--peers", "nope", "--out", str(tmp_path)]) == 2
    assert "--peers: unknown nope" in capsys.readouterr().err
    assert main(["--epsilons", "0,1", "--out", str(tmp_path)]) == 2
    assert "--epsilons" in capsys.readouterr().err


def test_the_script_runs_from_any_folder(tmp_path):
    """``python benchmarks/bench_peers.py`` is the documented entry point; it needs no installed copy of
    benchmarks/ and no particular working directory."""
    import subprocess

    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_peers.py"), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "usage: bench_peers.py" in proc.stdout and "diffprivlib" in proc.stdout
    bad = subprocess.run([sys.executable, str(BENCHMARKS / "bench_peers.py"), "--peers", "nope",
                          "--out", str(tmp_path / "o")], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, check=False)
    assert bad.returncode == 2 and "--peers: unknown nope" in bad.stderr
