"""Contract of the registry's Fisher-discriminant entries (``task="gep"``)."""

from __future__ import annotations

import numpy as np
import pytest

from dpspectral import methods
from dpspectral._registry import get_method
from dpspectral.gep import GEP_METHODS, fda_pair, simultaneous_reduction

GEP = methods(task="gep")
PRIVATE = [m for m in GEP if m.private]


def _data(n: int = 400, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) + 2.0 * np.eye(d)[y]
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


def _kwargs(m, **extra):
    kw = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, calibration=m.default_calibration) if m.private else {}
    if "sparsity" in m.options:
        kw["sparsity"] = 3
    kw.update(extra)
    return kw


def test_registry_lists_every_gep_solver_and_the_reference():
    assert {m.name for m in GEP} == set(GEP_METHODS) | {"sr"}
    assert all(m.family == "gep" and m.model == "central" for m in GEP)
    assert [m.name for m in GEP if not m.private] == ["sr"]


@pytest.mark.parametrize("m", PRIVATE, ids=lambda m: m.name)
def test_private_entry_releases_certified_directions(m):
    X, y = _data(n=1500)  # classes of ~500 rows: "moments" releases the label set (threshold ~120 rows)
    r = m(X, y, 2, random_state=3, **_kwargs(m))
    assert r.vectors.shape == (X.shape[1], 2) and np.all(np.isfinite(r.vectors))
    assert r.privacy is not None and r.privacy.certified
    assert r.privacy.epsilon <= 1.0 and r.privacy.delta <= 1e-5
    again = m(X, y, 2, random_state=3, **_kwargs(m))
    np.testing.assert_array_equal(r.vectors, again.vectors)
    if "sparsity" in m.options:
        assert np.all(np.count_nonzero(r.vectors, axis=0) <= 3)


@pytest.mark.parametrize("m", PRIVATE, ids=lambda m: m.name)
def test_entry_refuses_other_relations(m):
    X, y = _data(n=60)
    other = "priv1" if "add_remove" in [r.value for r in m.relations] else "add_remove"  # moments: both
    with pytest.raises(ValueError, match="replace_one"):
        m(X, y, 1, relation=other, **_kwargs(m))


@pytest.mark.parametrize("m", PRIVATE, ids=lambda m: m.name)
def test_entry_needs_its_privacy_parameters(m):
    X, y = _data(n=60)
    with pytest.raises(TypeError, match="epsilon, delta and row_norm"):
        m(X, y, 1, epsilon=1.0, delta=1e-5)


def test_nonprivate_reference_is_the_simultaneous_reduction_of_the_unclipped_pair():
    X, y = _data()
    X = X * np.random.default_rng(1).uniform(1.0, 3.0, size=(len(X), 1))  # the reference must not clip
    r = get_method("sr")(X, y, 2)
    clipped = get_method("sr")(X, y, 2, row_norm=1.0)
    assert not np.allclose(np.abs(clipped.vectors), np.abs(r.vectors), rtol=1e-3)
    ref = simultaneous_reduction(*(lambda p: (p.A, p.B))(fda_pair(X, y, row_norm=3.0)), 2,
                                 regularization=0.01)
    assert r.privacy is None
    np.testing.assert_allclose(np.abs(r.vectors), np.abs(ref.vectors), rtol=1e-8, atol=1e-10)


# The CLI's wording of these refusals belongs to the CLI (every paper has its own options):
# here, only that the chen2025 option is refused, before any work, with a message naming it.
@pytest.mark.parametrize("argv, named", [
    (["reproduce", "liu2022", "--clf-rows", "10"], "--clf-rows"),
    (["reproduce", "shang2021", "--label-column", "y"], "--label-column"),
    (["reproduce", "imtiaz2018", "--jobs", "2"], "--jobs"),
    (["reproduce", "liu2022", "--datasets", "rt-iot2022"], "rt-iot2022"),
])
def test_chen2025_flags_are_refused_by_other_reproductions(argv, named, capsys):
    from dpspectral.cli import main

    assert main(argv) == 2
    captured = capsys.readouterr()
    assert named in captured.err and captured.out == ""


def test_index_only_is_refused_by_a_single_reproduction(capsys):
    from dpspectral.cli import main

    assert main(["reproduce", "liu2022", "--index-only"]) == 2
    err = capsys.readouterr().err
    assert "--index-only applies to" in err and "all" in err
