"""The clipped moments summed in runs of pieces on several threads: the same floats whatever the number
of threads, the groups of the rounding bound unchanged, BLAS's own threads restored, and a forked child
that inherits the pool still gets its sums."""

import multiprocessing
import os

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import dpspectral._moments as moments
from dpspectral._moments import _runs, accumulate, gram_block_rows


def _data(seed=0, n=40_000, d=60):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.05, 0.3, size=(n, 1))
    return X, rng.standard_normal(d) * 0.05


def _moments(X, center, **kw):
    m = accumulate(X, row_norm=1.0, center=center, want_sum=True, want_second=True, **kw)
    return m.sum, m.second, m.n_clipped


@pytest.mark.parametrize("center", [False, True])
def test_the_same_floats_whatever_the_number_of_threads(monkeypatch, center):
    X, mu = _data()
    mu = mu if center else None
    results = []
    for workers in (1, 2, 3, 5):
        monkeypatch.setattr(moments, "_worker_count", lambda tasks, d, w=workers: max(1, min(w, tasks)))
        results.append(_moments(X, mu))
    total, second, clipped = results[0]
    assert 0 < clipped < X.shape[0]
    for other in results[1:]:
        assert np.array_equal(other[0], total) and np.array_equal(other[1], second) and other[2] == clipped
    Y = X - (0.0 if mu is None else mu)
    Y *= np.minimum(1.0, 1.0 / np.linalg.norm(Y, axis=1))[:, None]
    np.testing.assert_allclose(second, Y.T @ Y, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(total, Y.sum(axis=0), rtol=1e-12, atol=1e-9)


def test_blocks_summed_one_by_one_give_the_threads_sums(monkeypatch):
    """A list of blocks (summed in the order given, each block's runs on the threads) equals the whole
    array summed on one thread when the blocks end where the runs do."""
    rows = 2 * moments._piece_rows(60)  # two runs of one piece each at d = 60
    X, mu = _data(1, n=5 * rows)
    blocks = [X[a:a + rows] for a in range(0, X.shape[0], rows)]
    threaded = _moments(blocks, mu)
    monkeypatch.setattr(moments, "_worker_count", lambda tasks, d: 1)
    assert all(np.array_equal(a, b) for a, b in zip(threaded[:2], _moments(X, mu)[:2], strict=True))


@pytest.mark.parametrize("d", [1, 60, 784, 3000])
@pytest.mark.parametrize("open_rows", [0, 5, (1 << 14) - 1])
def test_runs_close_where_the_groups_close(d, open_rows):
    """The runs tile the block, hold at most ``_RUN_ROWS`` rows (or one piece), and a run ends at every
    piece where a group added piece by piece would close: so each group holds fewer than
    ``gram_block_rows(d)`` rows, the bound the rounding analysis takes."""
    step = moments._piece_rows(d)
    m = 5 * (1 << 14) + 123
    runs = _runs(m, d, open_rows)
    assert runs[0][0] == 0 and runs[-1][1] == m
    assert all(a[1] == b[0] for a, b in zip(runs, runs[1:], strict=False))
    assert all(b - a <= max(moments._RUN_ROWS, step) for a, b in runs)
    ends = {b for _, b in runs}
    rows, group, closes = open_rows, 0, []
    for a in range(0, m, step):  # the groups of the pieces added one at a time
        b = min(a + step, m)
        rows += b - a
        group += b - a
        if rows >= 1 << 14:
            closes.append(b)
            assert group + (open_rows if len(closes) == 1 else 0) < gram_block_rows(d)
            rows, group = 0, 0
    assert closes and set(closes) <= ends


def test_blas_threads_restored():
    before = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
    X, mu = _data(2)
    _moments(X, mu)
    assert [(i["internal_api"], i["num_threads"]) for i in threadpool_info()] == before


def _child(queue):
    X, mu = _data(3, n=20_000)
    queue.put(_moments(X, mu)[1].sum())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_gets_its_sums(monkeypatch):
    """The thread pool kept between calls has no threads in a forked child: the child makes its own
    (a pool copied as it is would wait for ever), even when the fork came while another thread held the
    pool's lock."""
    monkeypatch.setattr(moments, "_worker_count", lambda tasks, d: max(1, min(2, tasks)))
    X, mu = _data(3, n=20_000)
    expected = _moments(X, mu)[1].sum()  # the parent's pool exists now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    with moments._POOL_LOCK:  # held at the fork, as by a thread of the parent between two fits
        child.start()
    child.join(120)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == expected


def test_threads_bounded_by_the_memory_of_their_matrices(monkeypatch):
    """Each thread holds ``d x d`` matrices: above d = 2364 one thread (BLAS's own threads then), and
    never more threads than runs or cores."""
    monkeypatch.setattr(moments.os, "sched_getaffinity", lambda pid: set(range(16)))
    assert moments._worker_count(100, 784) == 8
    assert moments._worker_count(3, 784) == 3
    assert moments._worker_count(100, 2364) == 2
    assert moments._worker_count(100, 2365) == 1
    monkeypatch.setattr(moments.os, "sched_getaffinity", lambda pid: {0})
    assert moments._worker_count(100, 784) == 1


def test_results_in_order_with_a_bounded_number_waiting():
    """The runs' sums come back in order, with at most ``ahead`` submitted and not yet taken; when one
    fails, the error reaches the caller and the runs not started are cancelled."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    started, lock = [], threading.Lock()

    def work(i):
        with lock:
            started.append(i)
        time.sleep(0.002 * ((7 * i) % 5))  # finishing out of order
        if i == 13:
            raise ValueError("run 13")
        return i

    pool = ThreadPoolExecutor(3)
    taken = []
    with pytest.raises(ValueError, match="run 13"):
        for value in moments._in_order(pool, work, list(range(40)), ahead=4):
            taken.append(value)
            assert len(started) <= len(taken) + 4
    assert taken == list(range(13))
    pool.shutdown(wait=True)
    assert len(started) <= 13 + 4


def test_one_pool_whatever_the_width(monkeypatch):
    """Calls of different widths (so different numbers of threads: 8 at d = 60, 2 at d = 200 under the
    memory bound set here) share one pool: no pool, and no idle threads, left behind by a call."""
    import threading

    monkeypatch.setattr(moments.os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(moments, "_THREAD_MATRIX_BYTES", 2 * 24 * 200 * 200)
    assert moments._worker_count(100, 60) == 8 and moments._worker_count(100, 200) == 2
    pool = None
    for seed, d in enumerate((60, 200, 60, 200, 60)):
        X = np.random.default_rng(seed).standard_normal((8 * 4369, d)) * 0.01
        accumulate(X, row_norm=1.0, want_second=True)
        pool = pool or moments._thread_pool()
    assert moments._thread_pool() is pool
    assert sum(t.name.startswith("dpspectral") for t in threading.enumerate()) <= moments._MAX_THREADS


def test_blas_threads_from_several_callers_at_once():
    """Two callers inside ``blas_threads(1)`` at once (two fits on two threads): BLAS stays on one thread
    until the last leaves, and then gets back the setting it had before the first entered."""
    from dpspectral._linalg import blas_threads

    def blas():
        return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

    before = blas()
    first, second = blas_threads(1), blas_threads(1)
    first.__enter__()
    second.__enter__()
    assert blas() == [1]
    first.__exit__(None, None, None)
    assert blas() == [1]  # the second caller is still inside
    second.__exit__(None, None, None)
    assert blas() == before


@pytest.mark.parametrize("share_over", [0.01, 0.5])
def test_rows_scaled_part_by_part_are_the_rows_clipped(share_over):
    """The pieces are centred and scaled in cache-sized parts, the scaled rows found in each part (few:
    each row by its factor; many: every row of the part): the moments are those of the rows clipped
    directly, wherever in a part the rows above the bound lie."""
    rng = np.random.default_rng(3)
    n, d = 20_000, 100
    X = rng.standard_normal((n, d)) * 0.05
    big = rng.random(n) < share_over
    X[big] *= rng.uniform(1.0, 40.0, size=(int(big.sum()), 1))
    mu = rng.standard_normal(d) * 0.01
    assert n > 4 * (moments._CACHED_ELEMENTS // d)  # several parts in each piece
    total, second, clipped = _moments(X, mu)
    Y = X - mu
    Y *= np.minimum(1.0, 1.0 / np.linalg.norm(Y, axis=1))[:, None]
    assert clipped == int((np.linalg.norm(X - mu, axis=1) > 1.0).sum()) > 0
    np.testing.assert_allclose(second, Y.T @ Y, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(total, Y.sum(axis=0), rtol=1e-12, atol=1e-10)
