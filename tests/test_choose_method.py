"""method="auto": the decision table, from public facts only, and DPPCA's use of it.

Deterministic, except the utility check, which is seeded: a spiked set where Analyze Gauss recovers the
top direction (sin theta < 0.2; a random direction in d = 20 has sin theta > 0.9 with probability
> 1 - 1e-6), so auto (= Analyze Gauss here) must be far better than random.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpspectral import DPPCA, UncentredWarning
from dpspectral._registry import AUTO_MATRIX_BYTES, choose_method, get_method

BIG_D = int((AUTO_MATRIX_BYTES / 8) ** 0.5) + 1


@pytest.mark.parametrize("facts, expected", [
    ({}, "analyze_gauss"),
    ({"relation": "add_remove"}, "analyze_gauss"),
    ({"relation": "local"}, "local_gaussian"),
    ({"relation": "local", "delta": 0.0}, "local_gaussian"),
    ({"delta": 0.0}, "ppca"),
    ({"delta": 0.0, "n_features": BIG_D}, "ppca"),
    ({"n_features": 784}, "analyze_gauss"),
    ({"n_features": BIG_D - 1}, "analyze_gauss"),
    ({"n_features": BIG_D}, "minibatch_oja"),
    ({"n_features": BIG_D, "stream": True}, "minibatch_oja"),
    ({"n_features": BIG_D, "relation": "add_remove"}, "analyze_gauss"),
    ({"stream": True}, "analyze_gauss"),
])
def test_decision_table(facts, expected):
    choice = choose_method(**facts)
    assert choice.method == expected
    assert choice.reason
    entry = get_method(choice.method)
    relation = facts.get("relation", "replace_one")
    assert relation in {r.value for r in entry.relations}  # the choice supports the relation asked


def test_auto_is_the_default_and_says_what_it_chose():
    X = np.random.default_rng(0).normal(size=(400, 6)) * 0.3
    est = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X)
    assert est.method == "auto" and est.method_ == "analyze_gauss" and est.method_reason_
    assert any("method='auto' chose 'analyze_gauss'" in n for n in est.privacy_.notes)
    named = DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method="analyze_gauss", random_state=0).fit(X)
    np.testing.assert_array_equal(est.components_, named.components_)  # the same release
    pure = DPPCA(2, epsilon=1.0, delta=0.0, row_norm=1.0, random_state=0).fit(X)
    assert pure.method_ == "ppca" and pure.privacy_.delta == 0


def test_auto_refuses_parameters_of_another_method_naming_its_choice():
    X = np.random.default_rng(0).normal(size=(400, 6)) * 0.3
    with pytest.raises(ValueError, match=r"method='auto' chose 'analyze_gauss' \(.*\).*\['n_steps'\]"):
        DPPCA(2, epsilon=1.0, delta=1e-6, row_norm=1.0, method_params={"n_steps": 5}).fit(X)
    with pytest.raises(ValueError, match="method='auto' chose 'ppca'.*does not centre"):
        DPPCA(2, epsilon=1.0, delta=0.0, row_norm=1.0, centering=np.zeros(6)).fit(X)
    # 'private' (the default) is not refused: ppca runs uncentred and says so
    with pytest.warns(UncentredWarning, match="method='ppca' cannot centre"):
        DPPCA(2, epsilon=1.0, delta=0.0, row_norm=1.0, centering="private").fit(X)


def test_auto_is_useful_on_a_spiked_set():
    rng = np.random.default_rng(3)
    d = 20
    u = np.linalg.qr(rng.normal(size=(d, 1)))[0]
    X = rng.normal(size=(20000, 1)) * 3.0 @ u.T + 0.3 * rng.normal(size=(20000, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    est = DPPCA(1, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).fit(X)
    v = est.components_.T
    assert np.linalg.norm(v - u @ (u.T @ v)) < 0.2


def test_an_unknown_relation_gets_the_usual_message():
    with pytest.raises(ValueError, match="'relation' parameter of method='auto'"):
        choose_method(relation="swap")
