"""DPLowRank(method="auto"): the method follows the relation asked for, never changes it."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from dpspectral import DPLowRank, Relation
from dpspectral._registry import choose_lowrank_method

TABLE = [
    (None, "private_frobenius_lrf", Relation.PRIV2),
    ("priv2", "private_frobenius_lrf", Relation.PRIV2),
    ("priv1", "private_frobenius_lrf", Relation.PRIV1),
    ("replace_one", "hardt_roth", Relation.REPLACE_ONE),
    ("add_remove", "covariance_lrf", Relation.ADD_REMOVE),
    ("local", "private_local_lrf", Relation.LOCAL),
]


@pytest.mark.parametrize("relation, method, protected", TABLE)
def test_auto_decision_table(relation, method, protected):
    choice = choose_lowrank_method(relation=relation)
    assert choice.method == method and choice.reason
    A = np.random.default_rng(0).uniform(size=(80, 12)) / 4.0  # rows of norm <= 1
    est = DPLowRank(2, epsilon=1.0, delta=1e-6, relation=relation, row_norm=1.0, random_state=0).fit(A)
    assert est.method == "auto" and est.method_ == method and est.method_reason_ == choice.reason
    assert est.privacy_.relation is protected
    assert any(note.startswith(f"method='auto' chose {method!r}") for note in est.privacy_.notes)


def test_auto_without_a_relation_is_the_previous_default_release():
    """Relation not given: Priv2 and the very release of method='private_frobenius_lrf' (same seeds)."""
    A = np.random.default_rng(1).uniform(size=(60, 10))
    kw = dict(epsilon=1.0, delta=1e-6, random_state=3, method_params={"sketch_seed": 5})
    auto = DPLowRank(2, **kw).fit(A)
    named = DPLowRank(2, method="private_frobenius_lrf", **kw).fit(A)
    np.testing.assert_array_equal(auto.U_, named.U_)
    np.testing.assert_array_equal(auto.V_, named.V_)
    assert named.method_ == "private_frobenius_lrf" and named.method_reason_ == "named by the caller"
    assert auto.privacy_.relation is named.privacy_.relation is Relation.PRIV2
    assert clone(auto).get_params()["method"] == "auto"


def test_auto_row_level_needs_row_norm_and_refuses_other_relations():
    A = np.random.default_rng(2).uniform(size=(40, 8)) / 3.0
    with pytest.raises(ValueError, match="'row_norm'.*required"):
        DPLowRank(2, epsilon=1.0, delta=1e-6, relation="replace_one").fit(A)
    with pytest.raises(ValueError, match="'relation'"):
        choose_lowrank_method(relation="row_change")
    with pytest.raises(ValueError, match="'method'"):
        DPLowRank(2, epsilon=1.0, delta=1e-6, method="best").fit(A)
