"""Secure aggregation for DPdisPCA (``aggregation="secure"``): the sum, the masks, the trust model, bad input.

Seeded and deterministic except where stated; the one statistical check (the masked words look uniform)
states its false-positive rate. Small data: a few seconds in all (the Dask case starts an in-process
cluster and is skipped without ``distributed``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import dp_accounting
import numpy as np
import pytest

pytest.importorskip("cryptography")

from dpspectral import Accountant  # noqa: E402
from dpspectral._linalg import top_k_eigh  # noqa: E402
from dpspectral.distributed import DistributedDPPCA, dpdispca, pooled_pca  # noqa: E402
from dpspectral.distributed._engines import InProcessEngine  # noqa: E402
from dpspectral.distributed._protocol import SiteFailureWarning  # noqa: E402
from dpspectral.distributed._secure import (  # noqa: E402
    MaskedMessage,
    SecureAggregationError,
    coalition_epsilon,
    masking_neighbours,
)
from dpspectral.distributed._site import pack_upper, unpack_upper  # noqa: E402
from dpspectral.privacy._accounting import epsilon_of  # noqa: E402
from dpspectral.privacy._noise import ExactNoise  # noqa: E402

EPS, DELTA, D = 0.5, 1e-6, 12


def _data(n: int = 1200, d: int = D, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.r_[4.0, 2.5, 1.5, np.ones(d - 3)]
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _sites(X: np.ndarray, s: int) -> list[np.ndarray]:
    return [b.copy() for b in np.array_split(X, s)]


def _secure(sites, k=3, **kw):
    kw.setdefault("epsilon", EPS)
    kw.setdefault("delta", DELTA)
    kw.setdefault("row_norm", 1.0)
    kw.setdefault("random_state", 0)
    return dpdispca(sites, k, aggregation="secure", **kw)


class Recording(InProcessEngine):
    """Records every step's public input and what each site sends; ``tamper`` may change either."""

    def __init__(self, tamper_in=None, tamper_out=None):
        self.log: list[tuple] = []
        self.tamper_in, self.tamper_out = tamper_in, tamper_out

    def run(self, sites, step, plan, seeds, *, timeout=None, show_progress=None):
        def wrapped(data, plan_, seed, s):
            if self.tamper_in is not None:
                data, plan_ = self.tamper_in(step.__name__, s, data, plan_)
            out = step(data, plan_, seed, s)
            if self.tamper_out is not None:
                out = self.tamper_out(step.__name__, s, out)
            self.log.append((step.__name__, s, plan_, out))
            return out

        return super().run(sites, wrapped, plan, seeds, timeout=timeout, show_progress=show_progress)


# --- the sum ------------------------------------------------------------------------------------------


def test_masks_cancel_and_the_sum_carries_the_pooled_noise():
    """The decoded sum is exactly sum_s of the sites' rounded noisy shares (round(c_s upper(S_s)) plus
    the exact noise share), redrawn by hand from each site's seed; the release is its top-k; the pooled
    noise equals Analyze Gauss's on the pooled rows."""
    X = _data()
    sites = _sites(X, 6)
    eng = Recording()
    res = _secure(sites, engine=eng)
    rnd = next(p for name, _, p, _ in eng.log if name == "message_step")
    g, share, sens = rnd.step, rnd.share_plan["share"].scale, rnd.share_plan["share"].sensitivity
    seeds = np.random.SeedSequence(0).spawn(6)
    total = np.zeros(D * (D + 1) // 2)
    for s, Xs in enumerate(sites):
        q = np.rint(pack_upper(Xs.T @ Xs) * (rnd.coefficients[s] / g))
        # the site's share: the exact discrete Gaussian release of q g from its own seed, on its grid
        noisy = ExactNoise(np.random.default_rng(seeds[s])).add_gaussian(q * g, share, sens)
        total += np.rint(noisy / g)
    values, vectors = top_k_eigh(unpack_upper(total * g, D), 3)
    np.testing.assert_allclose(np.abs(res.components), np.abs(vectors), atol=1e-10)
    pooled = pooled_pca(X, 3, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=0)
    pooled_std = pooled.diagnostics["noise_std"] / X.shape[0]  # on A = X^T X / N
    assert res.diagnostics["noise_std"] == pytest.approx(pooled_std, rel=1e-5)
    assert res.diagnostics["noise_std"] == pytest.approx(share * math.sqrt(6), rel=1e-12)
    assert res.privacy.certified and res.privacy.epsilon == pytest.approx(EPS, abs=1e-6)
    assert res.n_samples == X.shape[0]


def test_default_protocol_is_unchanged():
    sites = _sites(_data(), 4)
    a = dpdispca(sites, 3, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=3)
    b = dpdispca(sites, 3, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=3, aggregation="independent")
    np.testing.assert_array_equal(a.components, b.components)
    assert a.diagnostics.keys() == b.diagnostics.keys() and "aggregation" not in a.diagnostics


def test_secure_utility_is_close_to_pooled_and_beats_independent():
    """40 sites of 50 rows, epsilon = 0.5: the secure sum's subspace is as good as the pooled one's
    (projection distance within 0.1 of it, mean of 3 seeds) and better than the independent protocol's."""
    X = _data(n=2000, d=8, seed=1)
    sites = _sites(X, 40)
    truth = top_k_eigh(X.T @ X, 2)[1]

    def dist(V):
        return float(np.linalg.norm(V @ V.T - truth @ truth.T))

    sec = np.mean([dist(_secure(sites, k=2, random_state=r).components) for r in range(3)])
    poo = np.mean([dist(pooled_pca(X, 2, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=r).components)
                   for r in range(3)])
    ind = np.mean([dist(dpdispca(sites, 2, epsilon=EPS, delta=DELTA, row_norm=1.0, random_state=r).components)
                   for r in range(3)])
    assert sec < poo + 0.1 and sec < ind


# --- what the aggregator and a coalition see ---------------------------------------------------------


def test_aggregator_sees_only_masked_words_and_bytes_are_counted():
    """Every masked message is 8 m bytes, differs from its unmasked words, and its words' top bits are
    uniform: over 30 sites x 78 words, the share of set top bits is within 5 standard deviations of 1/2
    (false-positive rate below 1e-6). bytes_sent counts the key message and the masked words."""
    X = _data(n=1500)
    eng = Recording()
    res = _secure(_sites(X, 30), engine=eng, k=2)
    m = D * (D + 1) // 2
    msgs = [out for name, _, _, out in eng.log if name == "message_step"]
    assert len(msgs) == 30 and all(isinstance(x, MaskedMessage) and len(x.data) == 8 * m for x in msgs)
    words = np.concatenate([np.frombuffer(x.data, dtype="<u8") for x in msgs])
    top = float(np.mean(words >> np.uint64(63)))
    assert abs(top - 0.5) < 5 * math.sqrt(0.25 / words.size)
    adverts = [out for name, _, _, out in eng.log if name == "advertise_step"]
    assert all(len(a.public_key) == 32 for a in adverts)
    assert res.bytes_sent == {s: adverts[s].nbytes + 8 * m for s in range(30)}
    assert res.diagnostics["bytes_total"] == sum(res.bytes_sent.values())


def test_masking_graph():
    assert masking_neighbours(list(range(5)), 2) == [0, 1, 3, 4]
    nb = masking_neighbours(list(range(100)), 0)
    assert len(nb) == 32 and 1 in nb and 99 in nb and 50 not in nb
    ids = list(range(100))
    for s in ids:  # symmetric: j masks with s exactly when s masks with j
        assert all(s in masking_neighbours(ids, j) for j in masking_neighbours(ids, s))


def test_coalition_epsilon_is_the_accountants_for_one_share():
    mult = 5.0
    for S in (1, 10, 100):
        want = epsilon_of([dp_accounting.GaussianDpEvent(mult / math.sqrt(S))], DELTA)
        assert coalition_epsilon(mult, S, DELTA) == pytest.approx(want)
    assert coalition_epsilon(mult, 100, DELTA) > coalition_epsilon(mult, 10, DELTA) > coalition_epsilon(
        mult, 1, DELTA)
    res = _secure(_sites(_data(), 10))
    assert res.diagnostics["coalition_epsilon"] > 3 * EPS


def _view(eng: Recording, res) -> list:
    """What the aggregator receives and each site receives, without the released values (masked words,
    whose values are the release) and the OS-random keys (compared by length)."""
    rows = []
    for name, s, plan, out in eng.log:
        if name == "advertise_step":
            rows.append((name, s, plan, len(out.public_key), out.n_features, out.n_samples, out.digest))
        else:
            rows.append((name, s, plan.coefficients, plan.step, plan.share_plan, plan.sites,
                         None if out is None else len(out.data)))
    diag = {k: v for k, v in res.diagnostics.items()}
    return [rows, diag, res.sites, str(res.privacy), res.n_samples, res.components.shape]


@pytest.mark.parametrize("neighbour", ["huge_row", "zero_row"])
def test_neighbour_invariance_of_every_message(neighbour):
    """Replace-one neighbours (a row of huge norm, clipped; a row of zeros), same seed: everything the
    aggregator and every site receive is identical but the masked words' values and the fresh keys."""
    X = _data(n=600)
    Y = X.copy()
    Y[17] = 1e6 * np.ones(D) if neighbour == "huge_row" else 0.0
    views = []
    for data in (X, Y):
        eng = Recording()
        acc = Accountant(epsilon=5.0, delta=1e-5)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = _secure(_sites(data, 5), engine=eng, accountant=acc)
        views.append((_view(eng, res), [(x.category, str(x.message)) for x in w], acc.spent()))
    assert views[0] == views[1]


# --- bad input -----------------------------------------------------------------------------------------


def test_a_site_with_bad_rows_is_left_out_before_the_charge_and_the_rest_certify():
    X = _data()
    sites = _sites(X, 5)
    sites[2][7, 3] = np.nan
    acc = Accountant(epsilon=5.0, delta=DELTA)
    eng = Recording()
    with pytest.warns(SiteFailureWarning, match=r"site 2 was left out .*NonPrivateDataError") as rec:
        res = _secure(sites, engine=eng, accountant=acc)
    for w in rec:  # the kind of problem only: no row index, column or count
        assert not any(t in str(w.message) for t in ("row 7", "7,", "column 3", "1 row"))
    assert res.contributing_sites == (0, 1, 3, 4) and res.privacy.certified
    rnd = next(p for name, _, p, _ in eng.log if name == "message_step")
    assert rnd.sites == [0, 1, 3, 4]  # no mask was ever fixed with site 2
    assert res.diagnostics["noise_std"] == pytest.approx(rnd.share_plan["share"].scale * 2, rel=1e-12)
    assert len(acc.entries) == 1 and acc.spent()[0] == pytest.approx(EPS, abs=1e-6)


def test_mismatched_dimensions_refused_before_any_charge():
    acc = Accountant(epsilon=5.0, delta=1e-5)
    sites = _sites(_data(), 3)
    sites[1] = sites[1][:, :-1]
    with pytest.raises(ValueError, match="site 1 has 11 features"):
        _secure(sites, accountant=acc)

    def narrow(name, s, data, plan):  # a site whose own data differ in width: it refuses itself
        return (data[:, :-1], plan) if s == 2 else (data, plan)

    with pytest.warns(SiteFailureWarning, match="site 2 was left out .*SiteInputError"):
        res = _secure(_sites(_data(), 3), engine=Recording(tamper_in=narrow), accountant=acc)
    assert res.contributing_sites == (0, 1)

    def wider(name, s, out):  # D unknown to the aggregator before the sites run (futures): its check
        return dataclasses.replace(out, n_features=D + 1) if name == "advertise_step" and s == 1 else out

    acc = Accountant(epsilon=5.0, delta=1e-5)
    with pytest.raises(ValueError, match="site 1 has a different number of features") as exc:
        _secure(_sites(_data(), 3), engine=Recording(tamper_out=wider), accountant=acc)
    assert "Nothing was charged" in str(exc.value) and len(acc.entries) == 0


def test_mismatched_parameters_refused_before_any_charge():
    acc = Accountant(epsilon=5.0, delta=1e-5)

    def other_bound(name, s, data, plan):
        if name == "advertise_step" and s == 1:
            plan = dataclasses.replace(plan, row_norm=2.0)
        return data, plan

    with pytest.raises(SecureAggregationError, match="site 1 ran with other public parameters"):
        _secure(_sites(_data(), 3), engine=Recording(tamper_in=other_bound), accountant=acc)
    assert len(acc.entries) == 0


@pytest.mark.parametrize("bad", ["truncated", "not_bytes"])
def test_a_malformed_share_is_refused_with_the_sites_name(bad):
    acc = Accountant(epsilon=5.0, delta=1e-5)

    def corrupt(name, s, out):
        if name == "message_step" and s == 2:
            return MaskedMessage(2, out.data[:-8]) if bad == "truncated" else MaskedMessage(2, "x")
        return out

    with pytest.raises(SecureAggregationError, match="site 2 sent a malformed share") as exc:
        _secure(_sites(_data(), 4), engine=Recording(tamper_out=corrupt), accountant=acc)
    assert "0." not in str(exc.value)  # no value of the site's data or message
    assert len(acc.entries) == 1 and acc.entries[0].status.startswith("failed")


def test_a_site_missing_in_round_two_ends_the_round_with_a_refusal():
    acc = Accountant(epsilon=5.0, delta=1e-5)

    def crash(name, s, data, plan):
        if name == "message_step" and s == 1:
            raise RuntimeError("secret row 3 = 0.123")
        return data, plan

    with pytest.raises(SecureAggregationError, match="site 1 did not send its masked message") as exc:
        _secure(_sites(_data(), 4), engine=Recording(tamper_in=crash), accountant=acc)
    assert "0.123" not in str(exc.value) and "row 3" not in str(exc.value)
    assert len(acc.entries) == 1 and acc.entries[0].status.startswith("failed")


@pytest.mark.parametrize("kw, match", [
    ({"relation": "add_remove"}, "relation"),
    ({"calibration": "paper"}, "calibration"),
    ({"intermediate_rank": 4}, "intermediate_rank"),
])
def test_unsupported_settings_refused_before_any_charge(kw, match):
    acc = Accountant(epsilon=5.0, delta=1e-5)
    with pytest.raises(ValueError, match=match):
        _secure(_sites(_data(), 3), accountant=acc, **kw)
    with pytest.raises(ValueError, match="aggregation"):
        dpdispca(_sites(_data(), 3), 2, epsilon=EPS, delta=DELTA, row_norm=1.0, aggregation="masked")
    assert len(acc.entries) == 0


def test_estimator_and_dask_engine_agree_with_in_process():
    sites = _sites(_data(), 4)
    est = DistributedDPPCA(3, epsilon=EPS, delta=DELTA, row_norm=1.0, engine="inprocess",
                           aggregation="secure", random_state=5).fit(sites)
    ref = _secure(sites, random_state=5)
    np.testing.assert_array_equal(est.components_, ref.components.T)
    assert est.privacy_.mechanism == "dpdispca_secure"
    distributed = pytest.importorskip("distributed")
    from dpspectral.distributed._engines import DaskEngine

    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                            dashboard_address=":0") as client:
        on_dask = _secure(sites, random_state=5, engine=DaskEngine(client))
    np.testing.assert_array_equal(on_dask.components, ref.components)
    assert on_dask.bytes_sent == ref.bytes_sent
