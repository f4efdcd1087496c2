"""Dask the way Dask users work: the caller's cluster is used, never replaced.

* With an active ``distributed.Client`` (an in-process ``LocalCluster(processes=False)``), a ``DPPCA`` fit
  on a Dask array and a DPdisPCA fit with ``engine="dask"`` run their tasks on that client
  (``distributed.get_task_stream``) and start no other cluster (``LocalCluster`` is replaced by a trap).
* Without one, ``DaskEngine`` starts a ``LocalCluster`` for the run and closes it after.
* Failures before anything is charged (the ``Accountant`` has no entry after each): a scheduler address
  that does not answer (a timeout naming the address), a Dask array of unknown width (unknown row counts
  are fine), a program whose worker processes cannot start (a script calling the fit outside
  ``if __name__ == "__main__":``, a program read from standard input).

Deterministic (seeded); every cluster is in-process (threads), so the tests fit on 2 shared cores.
"""

from __future__ import annotations

import copy
import socket
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from dpspectral import DPPCA  # noqa: E402
from dpspectral.distributed import DistributedDPPCA, dpdispca  # noqa: E402
from dpspectral.distributed._engines import (  # noqa: E402
    DaskConnectionError,
    DaskEngine,
    DaskStartError,
    check_worker_processes_can_start,
)
from dpspectral.privacy import Accountant  # noqa: E402

KW: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-5, "row_norm": 1.0}


def _data(n: int = 1200, d: int = 6, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.linspace(2.0, 0.5, d)
    return X / np.linalg.norm(X, axis=1).max()


@pytest.fixture
def client() -> Iterator[Any]:
    """The caller's active client: an in-process cluster (threads), the default client."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture
def no_new_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a LocalCluster from now on fails the test."""
    def trap(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a LocalCluster was started beside the caller's client")

    monkeypatch.setattr(distributed, "LocalCluster", trap)


def _task_names(stream: Any) -> set[str]:
    return {str(t["key"]) for t in stream.data}


def test_dppca_on_a_dask_array_runs_on_the_active_client(client: Any, no_new_cluster: None) -> None:
    X = _data()
    ref = DPPCA(2, random_state=3, **KW).fit(X)
    A = da.from_array(X, chunks=(300, 3))
    with distributed.get_task_stream(client) as stream:
        est = DPPCA(2, random_state=3, **KW).fit(A)
    # every block of the array was read by a task of this client, and the partials summed there
    names = _task_names(stream)
    assert sum(A.name in k for k in names) == A.npartitions and any("sum" in k for k in names), names
    assert np.allclose(est.components_, ref.components_, atol=1e-10)
    assert client.status == "running" and len(client.scheduler_info()["workers"]) == 1


def test_dpdispca_uses_the_active_client(client: Any, no_new_cluster: None) -> None:
    X = _data()
    sites = [X[:400], X[400:800], X[800:]]
    ref = dpdispca(sites, 2, random_state=5, engine="inprocess", **KW)
    with distributed.get_task_stream(client) as stream:
        res = dpdispca(sites, 2, random_state=5, engine="dask", **KW)
        est = DistributedDPPCA(2, random_state=5, **KW).fit(da.from_array(X, chunks=(400, 6)))
    ran = [k for k in _task_names(stream) if k.startswith("dpdispca-site")]
    assert len(ran) == 6, ran  # 3 sites for the function, 3 row blocks for the estimator
    assert np.abs(res.components - ref.components).max() <= 1e-10
    assert np.abs(est.components_ - ref.components.T).max() <= 1e-10
    workers = set(client.scheduler_info()["workers"])
    assert {s.worker for s in res.sites} <= workers and client.status == "running"


def test_the_callers_persisted_array_survives_the_fits(client: Any, no_new_cluster: None) -> None:
    """The sites' blocks of a persisted array share its keys: the engine releases them, never cancels
    them (cancelling destroyed the caller's data, and a second fit found every site lost)."""
    A = da.from_array(_data(), chunks=(400, 6)).persist()
    distributed.wait(A)
    first = DistributedDPPCA(2, random_state=5, **KW).fit(A)
    DPPCA(2, random_state=3, **KW).fit(A)
    second = DistributedDPPCA(2, random_state=5, **KW).fit(A)
    assert first.sites_failed_ == {} and second.sites_failed_ == {}
    assert np.array_equal(first.components_, second.components_)
    assert all(f.status == "finished" for f in distributed.futures_of(A))


def test_a_client_passed_in_is_used_and_survives_cloning(no_new_cluster: None) -> None:
    from sklearn.base import clone

    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0",
                            set_as_default=False) as c:
        est = DistributedDPPCA(2, engine=DaskEngine(client=c), random_state=1, **KW)
        assert clone(est).engine.client is c and copy.deepcopy(est.engine).client is c
        with distributed.get_task_stream(c) as stream:
            est.fit([_data(300), _data(300, seed=1)])
        assert sum(k.startswith("dpdispca-site") for k in _task_names(stream)) == 2
        assert c.status == "running"


def test_without_a_client_a_local_cluster_is_started_and_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert distributed.client._get_global_client() is None, "another test left a client open"
    started: list[Any] = []
    real = distributed.LocalCluster

    def spy(*args: Any, **kwargs: Any) -> Any:
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(distributed, "LocalCluster", spy)
    engine = DaskEngine(n_workers=1, cluster_kwargs={"processes": False})
    res = dpdispca([_data(300), _data(300, seed=1)], 2, random_state=1, engine=engine, **KW)
    assert len(started) == 1 and started[0].status.name == "closed"
    assert res.diagnostics["engine"] == "dask"


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_address_that_does_not_answer_times_out_naming_it(client: Any) -> None:
    address = f"tcp://127.0.0.1:{_unused_port()}"
    acc = Accountant(10.0, 1e-3)
    est = DistributedDPPCA(2, engine=DaskEngine(scheduler_address=address, connect_timeout=1.0),
                           accountant=acc, **KW)
    t0 = time.perf_counter()
    with pytest.raises(DaskConnectionError, match=address.replace(".", r"\.")) as err:
        est.fit([_data(300), _data(300, seed=1)])  # the address wins over the active client
    assert time.perf_counter() - t0 < 8.0
    assert isinstance(err.value, TimeoutError) and "Nothing was charged" in str(err.value)
    assert acc.entries == ()


def _unknown_width(X: np.ndarray) -> Any:
    A = da.from_array(X, chunks=(300, 3))
    return A[:, A[0] > -np.inf]  # a column selection by a computed mask: the width is unknown


def test_unknown_chunk_sizes(client: Any) -> None:
    X = _data()
    acc = Accountant(10.0, 1e-3)
    wide = _unknown_width(X)
    assert np.isnan(wide.shape[1])
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        DPPCA(2, accountant=acc, **KW).fit(wide)
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        DistributedDPPCA(2, accountant=acc, **KW).fit(wide)
    assert acc.entries == ()
    # the documented remedy, and unknown row counts (a row selection), fit like the known array
    ref = DPPCA(2, random_state=3, **KW).fit(X)
    fixed = DPPCA(2, random_state=3, **KW).fit(wide.compute_chunk_sizes())
    A = da.from_array(X, chunks=(300, 3))
    rows = A[A[:, 0] > -np.inf]
    assert np.isnan(rows.shape[0])
    by_rows = DPPCA(2, random_state=3, **KW).fit(rows)
    assert np.allclose(fixed.components_, ref.components_, atol=1e-10)
    assert np.allclose(by_rows.components_, ref.components_, atol=1e-10)


def _run_as_main(path: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``source`` as the top-level code of a main module read from ``path``."""
    main = types.ModuleType("__main__")
    main.__file__ = str(path)
    with monkeypatch.context() as patch:  # the real __main__ is back afterwards
        patch.setitem(sys.modules, "__main__", main)
        exec(compile(source, str(path), "exec"), vars(main))


def test_worker_processes_that_cannot_start_are_refused_up_front(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import dpspectral.distributed._engines as engines

    call = "from dpspectral.distributed._engines import check_worker_processes_can_start as check\n"
    guarded = call + 'if __name__ == "__main__":\n    check()\n'
    unguarded = call + "x = 1\ncheck()\n"
    script = tmp_path / "fit.py"
    for source in (guarded, unguarded):
        script.write_text(source)
        if source is guarded:
            _run_as_main(script, source, monkeypatch)  # guarded: nothing to say
        else:
            outside = r'line 3 of .*fit\.py outside `if __name__ == "__main__":`'
            with pytest.raises(DaskStartError, match=outside):
                _run_as_main(script, source, monkeypatch)
    # a program read from standard input: no file for the workers to re-run
    with pytest.raises(DaskStartError, match="standard input"):
        _run_as_main(tmp_path / "<stdin>", unguarded, monkeypatch)
    # called later (not from the main module's top-level code), or with fork: fine
    check_worker_processes_can_start()
    monkeypatch.setattr(engines, "_unguarded_call_line", lambda main, path: 3)
    import dask

    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        _run_as_main(script, unguarded, monkeypatch)


def test_a_program_on_standard_input_fails_fast_with_nothing_charged() -> None:
    """End to end: ``python - < script`` calling DPdisPCA on a new LocalCluster (it died with "Nanny
    failed to start" before)."""
    source = textwrap.dedent("""
        import numpy as np
        from dpspectral.distributed import dpdispca
        from dpspectral.privacy import Accountant
        acc = Accountant(10.0, 1e-3)
        X = np.eye(4)[[0, 1, 2, 3] * 10] * 0.5
        try:
            dpdispca([X[:20], X[20:]], 2, epsilon=1.0, delta=1e-5, row_norm=1.0, engine="dask",
                     accountant=acc)
        except Exception as exc:
            print(type(exc).__name__, len(acc.entries), str(exc))
    """)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-"], input=source, capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - t0
    assert out.stdout.startswith("DaskStartError 0 "), out.stdout + out.stderr
    assert "if __name__" in out.stdout and "Client(processes=False)" in out.stdout
    assert "the main program (<stdin>) was read from standard input" in out.stdout  # found up front
    assert elapsed < 30  # the import of the library dominates; no worker process is started


def test_dask_partials_match_the_in_memory_moments() -> None:
    """The per-block packed partials (local threads, no client): the same clipped sums and counts as in
    memory, with a centre, empty and unknown-size blocks; NaN and over-bound rows refused as in memory."""
    from dpspectral._moments import accumulate
    from dpspectral.privacy._pipeline import NonPrivateDataError

    rng = np.random.default_rng(4)
    X = rng.normal(size=(1000, 7)) * 0.6  # most rows above the bound 1: clipped
    centre = rng.normal(size=7) * 0.1
    A = da.from_array(X, chunks=(128, 3))
    A = A[da.from_array(np.arange(1000) < 1000, chunks=128)]  # unknown row counts
    A = da.concatenate([A, da.zeros((0, 7), chunks=(0, 7))])  # and an empty block
    for center in (None, centre):
        ref = accumulate(X, row_norm=1.0, center=center, want_sum=True)
        got = accumulate(A, row_norm=1.0, center=center, want_sum=True)
        assert (got.n, got.d, got.n_clipped) == (ref.n, ref.d, ref.n_clipped) and ref.n_clipped > 500
        assert got.sum is not None and ref.sum is not None
        assert got.second is not None and ref.second is not None
        assert np.allclose(got.sum, ref.sum, atol=1e-9) and np.allclose(got.second, ref.second, atol=1e-9)
        assert np.array_equal(got.second, got.second.T)
    only_sum = accumulate(A, row_norm=1.0, want_sum=True, want_second=False)
    assert only_sum.second is None and only_sum.sum is not None
    bad = X.copy()
    bad[700, 2] = np.inf
    with pytest.raises(NonPrivateDataError, match="NaN or infinity"):
        accumulate(da.from_array(bad, chunks=(128, 7)), row_norm=1.0)
    with pytest.raises(NonPrivateDataError, match="on_norm_violation='raise'"):
        accumulate(da.from_array(X, chunks=(128, 7)), row_norm=1.0, on_norm_violation="raise")

