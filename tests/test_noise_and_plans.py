"""The release pipeline's noise sources and plans.

* The exact samplers (CKS20) follow their laws: chi-square goodness of fit against the exact discrete
  pmf, run on a seeded ``random.Random`` (the samplers take their bits as an argument; the OS CSPRNG is
  the default). Each goodness-of-fit test rejects at p < 1e-4 (false-positive rate 1e-4 per test, and
  the seeds are fixed, so the outcome is deterministic); a negative control (a sampler with the wrong
  scale) must be rejected.
* The secure source rounds to its grid and widens the noise by the rounding's sensitivity, so the
  ratio noise / sensitivity the events record is unchanged; its outputs are exact grid multiples.
* The floating-point source (``config_context(noise="float")``) draws exactly what ``rng.normal`` drew;
  the default for a seeded ``random_state`` is the exact source, reproducible from the seed.
* A plan's noise is drawn only by a planned name, only inside the charged block; a staged run is
  checked against the ceiling before its first stage and each stage must match its declared cost.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from dpspectral import config_context, set_config
from dpspectral.privacy import Accountant, BudgetExceededError, PrivacyBudget, Relation
from dpspectral.privacy._gaussian import symmetric_gaussian
from dpspectral.privacy._noise import (
    GRID_BITS,
    ExactNoise,
    SecureNoise,
    SeededNoise,
    discrete_gaussian,
    discrete_laplace,
    noise_source,
)
from dpspectral.privacy._pipeline import NoisyRelease, ReleasePlan, StagedRelease, precheck, release

P_REJECT = 1e-4


def _chi2_p(samples: list[int], pmf) -> float:
    """Chi-square p-value of integer samples against ``pmf`` (cells with expected count >= 5)."""
    values = np.asarray(samples)
    lo, hi = values.min() - 1, values.max() + 1
    support = np.arange(lo - 50, hi + 51)
    probs = np.array([pmf(x) for x in support])
    probs /= probs.sum()
    n = len(samples)
    # merge tails into cells with expected count >= 5
    cells, exp_counts, current, current_exp = [], [], [], 0.0
    for x, p in zip(support, probs, strict=True):
        current.append(x)
        current_exp += n * p
        if current_exp >= 5:
            cells.append(current)
            exp_counts.append(current_exp)
            current, current_exp = [], 0.0
    if current:
        cells[-1].extend(current)
        exp_counts[-1] += current_exp
    observed = [int(np.isin(values, c).sum()) for c in cells]
    return float(stats.chisquare(observed, np.asarray(exp_counts) * n / sum(exp_counts)).pvalue)


@pytest.mark.parametrize("sigma", [Fraction(7, 10), Fraction(3), Fraction(25, 2)])
def test_discrete_gaussian_follows_its_law(sigma: Fraction) -> None:
    bits = random.Random(int(sigma * 1000))
    samples = [discrete_gaussian(sigma, bits) for _ in range(6000)]
    s2 = float(sigma) ** 2
    assert _chi2_p(samples, lambda x: math.exp(-x * x / (2 * s2))) > P_REJECT
    # negative control: the same samples against a law 20% wider must be rejected
    wide = 1.44 * s2
    assert _chi2_p(samples, lambda x: math.exp(-x * x / (2 * wide))) < P_REJECT


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(2), Fraction(17, 3)])
def test_discrete_laplace_follows_its_law(scale: Fraction) -> None:
    bits = random.Random(int(scale * 100) + 7)
    samples = [discrete_laplace(scale, bits) for _ in range(6000)]
    b = float(scale)
    assert _chi2_p(samples, lambda x: math.exp(-abs(x) / b)) > P_REJECT
    assert _chi2_p(samples, lambda x: math.exp(-abs(x) / (1.3 * b))) < P_REJECT


def test_secure_source_outputs_grid_multiples_with_the_planned_spread() -> None:
    source = SecureNoise(bits=random.Random(1))
    std, sensitivity = 0.37, 0.05
    stat = np.linspace(-1.0, 1.0, 4000) + 1e-13  # values off the grid
    out = source.add_gaussian(stat, std, sensitivity)
    grid = math.ldexp(1.0, math.floor(math.log2(std)) - GRID_BITS)
    assert np.all(np.mod(out, grid) == 0.0)  # exact multiples: no low-order bits of a float sample
    noise = out - stat
    # the widening factor is tiny (< 1e-6 here), so the spread is the planned std: a chi-square
    # interval for the sample variance (false-positive rate 1e-4 on each side)
    n = noise.size
    lo, hi = stats.chi2.ppf([P_REJECT / 2, 1 - P_REJECT / 2], n - 1) / (n - 1)
    assert lo < np.var(noise, ddof=1) / std**2 < hi
    lap = source.add_laplace(stat, 0.2, 0.01) - stat
    lo, hi = stats.chi2.ppf([P_REJECT / 2, 1 - P_REJECT / 2], n - 1) / (n - 1)
    assert 0.8 < np.var(lap, ddof=1) / (2 * 0.2**2) < 1.2  # Laplace variance 2 b^2 (n = 4000: se 0.05)


def test_secure_source_widens_the_noise_for_the_rounding() -> None:
    """With a coarse grid the widening is visible: sigma' = sigma (Delta + g sqrt(m)) / Delta."""
    calls: list[Fraction] = []

    class Recording(SecureNoise):
        pass

    import dpspectral.privacy._noise as noise_module

    original = noise_module.discrete_array

    def spy(kind: str, sigma: Fraction, size: int, words) -> np.ndarray:
        assert kind == "gaussian"
        calls.append(sigma)
        return np.zeros(size, dtype=np.int64)

    noise_module.discrete_array = spy  # type: ignore[assignment]
    try:
        Recording(bits=random.Random(0)).add_gaussian(np.zeros(100), 1.0, 1e-6)
    finally:
        noise_module.discrete_array = original  # type: ignore[assignment]
    grid = math.ldexp(1.0, -GRID_BITS)
    expected = (1e-6 + grid * 10) / 1e-6 / grid  # in grid steps, then rounded up to an integer
    assert calls[0] == math.ceil(expected)


def test_secure_source_refuses_a_release_without_sensitivity() -> None:
    with pytest.raises(ValueError, match="needs each release's sensitivity"):
        SecureNoise().add_gaussian(np.zeros(3), 1.0, None)


def test_secure_symmetric_noise_is_symmetric_on_the_grid() -> None:
    M = SecureNoise(bits=random.Random(3)).add_symmetric_gaussian(np.eye(5), 0.5, 1.0)
    assert np.array_equal(M, M.T)
    assert not np.allclose(M, np.eye(5))


def test_seeded_source_draws_what_numpy_drew() -> None:
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    source = SeededNoise(a)
    x = np.arange(6.0)
    assert np.array_equal(source.add_gaussian(x, 0.3), x + b.normal(0.0, 0.3, size=6))
    assert source.add_gaussian(2.0, 0.1) == 2.0 + float(b.normal(0.0, 0.1))
    assert np.array_equal(source.add_laplace(x, 0.3), x + b.laplace(0.0, 0.3, size=6))
    S = np.eye(4)
    assert np.array_equal(source.add_symmetric_gaussian(S, 0.2), S + symmetric_gaussian(4, 0.2, b))


def test_noise_source_resolution() -> None:
    assert noise_source(None).name == "exact"
    assert noise_source(3).name == "exact"
    assert isinstance(noise_source(np.random.default_rng(3)), ExactNoise)
    assert noise_source("secure").name == "secure"
    with config_context(noise="float"):
        assert noise_source(3).name == "float" and isinstance(noise_source(3), SeededNoise)
        assert noise_source("secure").name == "secure"
    assert noise_source(3).name == "exact"
    with pytest.raises(ValueError, match="'noise' setting"):
        set_config(noise="gaussian")
    with pytest.raises(ValueError, match="'random_state'.*'secure'"):
        noise_source("securely")
    with pytest.raises(TypeError):
        noise_source(1.5)


def _plan(std: float = 1.0) -> ReleasePlan:
    return ReleasePlan("toy", Relation.ADD_REMOVE, (dp_accounting.GaussianDpEvent(std),),
                       (NoisyRelease("sum", "gaussian", std, 1.0),))


def test_noise_only_by_planned_name_and_inside_the_block() -> None:
    acc = Accountant()
    with release(_plan(), acc, noise_source(0)) as releaser:
        releaser.add("sum", np.zeros(2))
        with pytest.raises(KeyError, match="no release named 'mean'"):
            releaser.add("mean", np.zeros(2))
    with pytest.raises(RuntimeError, match="after its release block"):
        releaser.add("sum", np.zeros(2))
    with pytest.raises(RuntimeError, match="after its release block"):
        _ = releaser.generator
    assert len(acc.entries) == 1 and not acc.failures


def test_release_refused_draws_nothing_and_failure_stays_charged() -> None:
    acc = Accountant(0.1, 1e-6)
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(BudgetExceededError), release(_plan(1.0), acc, SeededNoise(gen)):
        raise AssertionError("the block must not run")
    assert gen.bit_generator.state == state and not acc.entries
    acc2 = Accountant()
    with pytest.raises(ZeroDivisionError), release(_plan(), acc2, noise_source(0)):
        raise ZeroDivisionError
    assert len(acc2.entries) == 1 and acc2.entries[0].status == "failed: ZeroDivisionError"


def test_report_names_the_noise_source() -> None:
    with release(_plan(), None, noise_source("secure")) as releaser:
        releaser.add("sum", np.zeros(2))
    report = releaser.report(mechanism="toy", budget=PrivacyBudget(5.0, 1e-5), calibration="tight")
    assert report.noise_source == "secure" and report.to_dict()["noise_source"] == "secure"
    assert any("secure source" in note for note in report.notes)


def test_staged_release_plans_the_second_stage_from_the_first() -> None:
    """An adaptive clip: stage 1 releases a noisy quantile, stage 2's scale follows the released clip."""
    rel = Relation.ADD_REMOVE
    mult = 4.0
    stage_events = [(dp_accounting.GaussianDpEvent(mult),), (dp_accounting.GaussianDpEvent(mult),)]
    acc = Accountant()
    staged = StagedRelease(acc, rel, "adaptive", stage_events)
    noise = noise_source(1)
    norms = np.array([0.5, 1.0, 2.0, 3.0])
    with staged.stage(ReleasePlan("quantile", rel, stage_events[0],
                                  (NoisyRelease("count", "gaussian", mult, 1.0),)), noise) as r:
        noisy_below = r.add("count", float((norms <= 2.0).sum()))
    clip = 2.0 if noisy_below > 2 else 3.0  # public: a function of the released value
    with staged.stage(ReleasePlan("sum", rel, stage_events[1],
                                  (NoisyRelease("sum", "gaussian", mult * clip, clip),)), noise) as r:
        r.add("sum", float(np.minimum(norms, clip).sum()))
    assert len(acc.entries) == 2 and staged.events == [e for ev in stage_events for e in ev]
    with pytest.raises(RuntimeError, match="all 2 declared stages"), staged.stage(_plan(), noise):
        pass


def test_staged_release_refuses_up_front_and_checks_each_stage() -> None:
    rel = Relation.ADD_REMOVE
    ev = (dp_accounting.GaussianDpEvent(2.0),)
    acc = Accountant(4.0, 1e-6)
    precheck(acc, list(ev), rel)  # one stage is affordable
    with pytest.raises(BudgetExceededError):  # four are not: refused before stage one
        StagedRelease(acc, rel, "too much", [ev, ev, ev, ev])
    assert not acc.entries
    staged = StagedRelease(Accountant(), rel, "s", [ev])
    wrong = ReleasePlan("s", rel, (dp_accounting.GaussianDpEvent(3.0),))
    with pytest.raises(ValueError, match="does not match the cost declared"), staged.stage(
            wrong, noise_source(0)):
        pass


def test_plan_names_each_release_once() -> None:
    with pytest.raises(ValueError, match="names each release once"):
        ReleasePlan("x", Relation.ADD_REMOVE, (), (NoisyRelease("a", "gaussian", 1.0, 1.0),
                                                   NoisyRelease("a", "gaussian", 1.0, 1.0)))


def test_analyze_gauss_secure_end_to_end() -> None:
    from dpspectral.pca import analyze_gauss

    X = np.random.default_rng(0).normal(size=(200, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    a = analyze_gauss(X, 2, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state="secure")
    b = analyze_gauss(X, 2, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state="secure")
    assert a.privacy.noise_source == "secure" and a.privacy.certified
    assert not np.allclose(a.components, b.components)
    seeded = analyze_gauss(X, 2, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0)
    assert seeded.privacy.noise_source == "exact"
    again = analyze_gauss(X, 2, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0)
    assert np.array_equal(seeded.components, again.components)  # reproducible from the seed
    with config_context(noise="float"):
        floating = analyze_gauss(X, 2, epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0)
    assert floating.privacy.noise_source == "float"


def test_secure_release_without_sensitivity_is_refused_before_the_charge() -> None:
    acc = Accountant()
    plan = ReleasePlan("paper", Relation.ADD_REMOVE, (dp_accounting.GaussianDpEvent(1.0),),
                       (NoisyRelease("sum", "gaussian", 1.0, None),))
    with pytest.raises(ValueError, match="Nothing was charged"), release(plan, acc, noise_source("secure")):
        raise AssertionError("the block must not run")
    assert not acc.entries
    # a release of sensitivity 0 does not depend on the data: released as it is
    zero = ReleasePlan("zero", Relation.ADD_REMOVE, (), (NoisyRelease("sum", "gaussian", 0.0, 0.0),))
    with release(zero, acc, noise_source("secure")) as releaser:
        assert np.array_equal(releaser.add("sum", np.arange(3.0)), np.arange(3.0))


@pytest.mark.parametrize("shape", ["iid", "goe"])
def test_exact_source_releases_on_the_grid_every_shape(shape: str) -> None:
    """Vectors, scalars, the symmetric shapes and the noise alone: every released value of the exact
    source is an exact multiple of its grid (for "goe", ``iso(M)`` is: the diagonal, and ``sqrt(2)``
    times each entry above it), and the spread is the planned one (chi-square interval on the
    variance, false-positive rate 1e-4 on each side)."""
    source = ExactNoise(np.random.default_rng(7))
    std, sensitivity = 0.37, 0.05
    g = math.ldexp(1.0, math.floor(math.log2(std)) - GRID_BITS)
    stat = np.linspace(-1.0, 1.0, 4000) + 1e-13
    out = source.add_gaussian(stat, std, sensitivity)
    assert np.all(np.mod(out, g) == 0.0)
    assert np.mod(source.add_gaussian(0.3 + 1e-13, std, sensitivity), g) == 0.0
    lap = source.add_laplace(stat, 0.2, 0.01)
    assert np.all(np.mod(lap, math.ldexp(1.0, math.floor(math.log2(0.2)) - GRID_BITS)) == 0.0)
    alone = source.gaussian(std, (50, 40), sensitivity)
    assert alone.shape == (50, 40) and np.all(np.mod(alone, g) == 0.0)
    d = 60
    M = source.add_symmetric_gaussian(np.eye(d) + 1e-13, std, sensitivity, shape=shape)
    assert np.array_equal(M, M.T)
    i, j = np.triu_indices(d)
    iso = M[i, j] * np.where(i == j, 1.0, math.sqrt(2.0) if shape == "goe" else 1.0)
    diag = np.diag(M) - 1.0
    assert np.all(np.mod(np.diag(M), g) == 0.0)
    if shape == "iid":
        assert np.all(np.mod(iso, g) == 0.0)
    noise = np.concatenate([out - stat, diag])
    n = noise.size
    lo, hi = stats.chi2.ppf([P_REJECT / 2, 1 - P_REJECT / 2], n - 1) / (n - 1)
    assert lo < np.var(noise, ddof=1) / std**2 < hi
    off = M[np.triu_indices(d, 1)] * (math.sqrt(2.0) if shape == "goe" else 1.0)
    lo, hi = stats.chi2.ppf([P_REJECT / 2, 1 - P_REJECT / 2], off.size - 1) / (off.size - 1)
    assert lo < np.var(off, ddof=1) / std**2 < hi


def test_exact_source_is_reproducible_from_its_seed() -> None:
    a = ExactNoise(np.random.default_rng(1)).add_gaussian(np.zeros(500), 1.0, 0.1)
    b = ExactNoise(np.random.default_rng(1)).add_gaussian(np.zeros(500), 1.0, 0.1)
    c = ExactNoise(np.random.default_rng(2)).add_gaussian(np.zeros(500), 1.0, 0.1)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
