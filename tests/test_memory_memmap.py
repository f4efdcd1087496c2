"""The out-of-core methods on a memmap hold a few blocks of rows, not the data.

``dp_spca`` and ``minibatch_oja`` run on a float64 ``np.memmap`` of 320 MB in a child process of their
own (``benchmarks/bench_memory.py``'s ``measure``: the parent polls the child's ``RssAnon`` every 2 ms
during the call). Two bounds, both derived from the size of a block of rows and far below the data's
``n d 8`` bytes:

* the anonymous memory the call allocates (copies, buffers, state) stays under ``6`` blocks of 32 MB
  (the largest chunk of rows these methods read at a time); a copy of the data (320 MB), of a sample of
  all its rows, or of its rows in a permuted order exceeds it;
* the file's pages still mapped after the call stay under the same bound: the pages of the rows read
  are released as the methods go, so a pass over a file larger than memory does not keep it resident.

Linux only (``/proc``); skipped elsewhere. About 20 s on two cores.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_memory.py"
ROWS, COLS = 400_000, 100
BLOCK_BYTES = (1 << 22) * 8  # the largest chunk of rows read at a time (stochastic.py's products)
BOUND_MIB = 6 * BLOCK_BYTES / 2**20  # 192 MiB, against 305 MiB of data


def _status_has(field: str) -> bool:
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
        return any(line.startswith(field + ":") for line in lines)
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not (_status_has("RssAnon") and _status_has("RssFile")),
                                reason="needs /proc/<pid>/status with RssAnon and RssFile (Linux)")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_memory", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def memmap_path(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("memmap") / "X.f64"
    bench.write_memmap(path, ROWS, COLS)
    return path


def test_bound_is_far_below_the_data() -> None:
    assert BOUND_MIB < 0.7 * ROWS * COLS * 8 / 2**20


@pytest.mark.parametrize("name", ["dp_spca", "minibatch_oja"])
def test_memmap_fit_holds_blocks_not_the_data(bench: ModuleType, memmap_path: Path, name: str) -> None:
    out = bench.measure(name, memmap_path, ROWS, COLS, timeout=120.0)
    assert not out.get("error"), out
    assert out["anon_peak_mib"] < BOUND_MIB, out
    assert out["file_kept_mib"] < BOUND_MIB, out


def test_copy_on_write_memmap_keeps_the_callers_changes(tmp_path: Path) -> None:
    """Pages of a ``mode="c"`` memmap are never released: that would discard the caller's changes."""
    import numpy as np

    from dpspectral.pca import dp_spca

    path = tmp_path / "c.f64"
    np.memmap(path, dtype=np.float64, mode="w+", shape=(3000, 10)).flush()  # zeros on disk
    X = np.memmap(path, dtype=np.float64, mode="c", shape=(3000, 10))
    X[:] = 0.1  # in memory only
    dp_spca(X, 2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0)
    assert float(X.min()) == 0.1
