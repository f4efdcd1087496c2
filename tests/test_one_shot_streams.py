"""One rule for every stream path: a one-shot stream is charged before it is read.

A one-shot stream (a generator or any iterator of row blocks) cannot be validated before the charge, so
every method that takes one charges the ledger before reading its rows, and a failure decided by the
data after that (NaN or infinity, a row over the bound with ``on_norm_violation="raise"``) stays
charged: the ledger entry is marked failed. Otherwise the refusal would be free, and the fact of the
failure (some row is bad) would leak without being paid for. A re-iterable source (a list of blocks,
a callable returning a fresh iterator, an array) is still read and validated whole before the charge:
its refusal costs nothing.

Every registered method is covered: those that take a stream (the test asserts they answer a clean
generator, so the list below cannot silently lose one) and those that do not (they refuse a generator
before anything is charged). The accountant has no ceiling, so every charge shows in its ledger.
"""

from __future__ import annotations

import dp_accounting
import numpy as np
import pytest
from _neighbours import observe

from dpspectral import DPPCA, Accountant, methods
from dpspectral.pca._covariance import mod_sulq
from dpspectral.privacy._budget import Relation
from dpspectral.privacy._noise import noise_source
from dpspectral.privacy._pipeline import NonPrivateDataError, ReleasePlan

N, D, K, BLOCK = 500, 6, 2, 64
CLASSES = (0, 1, 2)

#: The registered methods that take no stream of blocks: the stochastic methods need random access to
#: the rows; the low-rank, GEP and distributed methods take a matrix, labelled rows or sites (a site's
#: rows held by Dask are read where they live, after the aggregator's charge).
NO_STREAM_PCA = {"dp_spca", "dp_vrpca"}
#: Public settings some methods need for a stream (n is public under replace-one).
SETTINGS = {"dp_pca": {"batch_size": 250, "n_samples": N}, "minibatch_oja": {"n_samples": N}}


def _clean() -> np.ndarray:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    return X * (0.5 / np.linalg.norm(X, axis=1, keepdims=True))  # every row inside row_norm=1


def _bad(case: str) -> np.ndarray:
    X = _clean()
    if case == "nan":
        X[N - 3, 2] = np.nan  # in the last block
    else:
        X[N - 3] *= 50.0  # a row over the bound, in the last block
    return X


def _blocks(X: np.ndarray) -> list[np.ndarray]:
    return [X[a:a + BLOCK] for a in range(0, X.shape[0], BLOCK)]


def _as(X: np.ndarray, kind: str):
    blocks = _blocks(X)
    if kind == "generator":
        return (b for b in blocks)
    if kind == "callable":
        return lambda: iter(blocks)
    return blocks


def _call(m, X, accountant, on_norm_violation: str = "clip"):
    kw: dict = {"on_norm_violation": on_norm_violation, "row_norm": 1.0, **SETTINGS.get(m.name, {})}
    if m.private:
        kw.update(epsilon=1.0, delta=1e-5 if m.needs_delta else 0.0, relation=m.relations[0],
                  calibration=m.default_calibration, accountant=accountant, random_state=0)
    if m.task == "gep":
        return m.function(X, np.arange(N) % 3, K, classes=CLASSES, **kw)
    return m.function(X, K, **kw)


STREAM_METHODS = [m for m in methods() if m.task == "pca" and m.model != "distributed"
                  and m.name not in NO_STREAM_PCA and m.private]


def _ids(ms):
    return [m.name for m in ms]


@pytest.mark.parametrize("method", STREAM_METHODS, ids=_ids(STREAM_METHODS))
def test_a_clean_generator_is_accepted(method):
    """Positive control: each method listed as taking a stream answers a clean generator."""
    out = observe(lambda acc: _call(method, _as(_clean(), "generator"), acc))
    assert not out.raised, out.error
    assert out.ledger and all(status == "released" for _, _, status in out.ledger)


@pytest.mark.parametrize("case", ["nan", "norm"])
@pytest.mark.parametrize("method", STREAM_METHODS, ids=_ids(STREAM_METHODS))
def test_a_generator_that_fails_on_its_last_block_stays_charged(method, case):
    onv = "raise" if case == "norm" else "clip"
    out = observe(lambda acc: _call(method, _as(_bad(case), "generator"), acc, onv))
    assert isinstance(out.exception, NonPrivateDataError), f"{method.name}: {out.error}"
    assert len(out.ledger) == 1, f"{method.name}: {out.ledger}"
    assert out.ledger[0][2] == "failed: NonPrivateDataError"


@pytest.mark.parametrize("kind", ["list", "callable"])
@pytest.mark.parametrize("case", ["nan", "norm"])
@pytest.mark.parametrize("method", STREAM_METHODS, ids=_ids(STREAM_METHODS))
def test_a_reiterable_source_with_the_same_rows_is_refused_before_the_charge(method, case, kind):
    onv = "raise" if case == "norm" else "clip"
    out = observe(lambda acc: _call(method, _as(_bad(case), kind), acc, onv))
    assert isinstance(out.exception, NonPrivateDataError), f"{method.name}: {out.error}"
    assert out.ledger == (), f"{method.name} charged a re-iterable source before refusing: {out.ledger}"


OTHER_METHODS = [m for m in methods() if m not in STREAM_METHODS and m.private]


@pytest.mark.parametrize("method", OTHER_METHODS, ids=_ids(OTHER_METHODS))
def test_a_method_without_streams_refuses_a_generator_before_the_charge(method):
    out = observe(lambda acc: _call(method, _as(_clean(), "generator"), acc))
    assert out.raised, f"{method.name} accepted a generator: add it to the stream methods above"
    assert out.ledger == ()


@pytest.mark.parametrize("simulate_sum", [True, False])
def test_local_reports_from_a_generator_are_charged_then_read(simulate_sum):
    m = next(m for m in methods() if m.name == "local_gaussian")
    ok = observe(lambda acc: m.function(_as(_clean(), "generator"), K, epsilon=1.0, delta=1e-5,
                                        row_norm=1.0, accountant=acc, random_state=0,
                                        simulate_sum=simulate_sum))
    assert not ok.raised and [s for _, _, s in ok.ledger] == ["released"]
    bad = observe(lambda acc: m.function(_as(_bad("nan"), "generator"), K, epsilon=1.0, delta=1e-5,
                                         row_norm=1.0, accountant=acc, random_state=0,
                                         simulate_sum=simulate_sum))
    assert [s for _, _, s in bad.ledger] == ["failed: NonPrivateDataError"]


@pytest.mark.parametrize("kind, charged", [("generator", True), ("list", False)])
def test_the_default_estimator_follows_the_rule(kind, charged):
    out = observe(lambda acc: DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc,
                                    random_state=0).fit(_as(_bad("nan"), kind)))
    assert isinstance(out.exception, NonPrivateDataError)
    assert [s for _, _, s in out.ledger] == (["failed: NonPrivateDataError"] if charged else [])


def test_public_mistakes_about_a_stream_are_refused_before_the_charge():
    # k above the first block's width (public, looked at before the charge)
    out = observe(lambda acc: DPPCA(D + 1, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc,
                                    random_state=0).fit(_as(_clean(), "generator")))
    assert isinstance(out.exception, ValueError) and out.ledger == ()
    # MOD-SULQ's paper calibration needs n for its plan: a one-shot stream gives it only once read
    acc = Accountant(delta=1e-3)
    with pytest.raises(ValueError, match="one-shot stream"):
        mod_sulq(_as(_clean(), "generator"), K, epsilon=1.0, delta=1e-5, row_norm=1.0,
                 calibration="paper", accountant=acc, random_state=0)
    assert acc.entries == ()
    # a stream with no block at all
    out = observe(lambda acc: DPPCA(K, epsilon=1.0, delta=1e-5, row_norm=1.0, accountant=acc,
                                    random_state=0).fit(iter([])))
    assert isinstance(out.exception, ValueError) and out.ledger == ()


def test_is_one_shot_and_open_one_shot():
    from dpspectral.privacy._pipeline import is_one_shot, open_one_shot

    blocks = _blocks(_clean())
    assert is_one_shot(iter(blocks)) and is_one_shot(b for b in blocks)
    assert not any(is_one_shot(x) for x in (blocks, _clean(), lambda: iter(blocks)))
    stream, d = open_one_shot(iter(blocks), "test")
    assert d == D
    assert np.array_equal(np.vstack(list(stream)), np.vstack(blocks))  # nothing lost by the peek


def test_a_restated_plan_must_keep_the_charged_events():
    from dpspectral.privacy._pipeline import read_then_release

    acc = Accountant(delta=1e-3)
    blocks = _blocks(_clean())

    def plan_for(n, d):  # the events depend on n: not a plan a one-shot stream can be charged for
        m = 1.0 if n is None else 2.0
        return ReleasePlan("test", Relation.REPLACE_ONE, (dp_accounting.GaussianDpEvent(m),))

    class Read:
        n, d = N, D

    with pytest.raises(RuntimeError, match="restated plan"):
        with read_then_release(iter(blocks), lambda s: Read, plan_for, acc, noise_source(0),
                               owner="test"):
            pass
    assert [e.status for e in acc.entries] == ["failed: RuntimeError"]
