"""pipeline_cost: the cost planned before fitting equals what fitting charges to a shared Accountant.

Each pipeline is planned (no data), then fitted with every private step on one Accountant without a
ceiling; the planned events must be the charged ones (as multisets of leaf events) and the composed
epsilon the accountant's. Non-private steps are flagged. Deterministic (fixed data and seeds).
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from dpspectral import (
    DPPCA,
    Accountant,
    DPLinearDiscriminantAnalysis,
    DPStandardScaler,
    pipeline_cost,
)

D = 6


def _data(n: int = 1500) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, D)) + np.outer(y, np.r_[1.5, -1.0, np.zeros(D - 2)])
    return X, y


def _leaves(events) -> list[str]:
    out: list[str] = []
    for e in events:
        if isinstance(e, dp_accounting.ComposedDpEvent):
            out += _leaves(e.events)
        else:
            out.append(repr(e))
    return sorted(out)


def _scaler(acc, **kw):
    return DPStandardScaler(**{"bounds": (-4.0, 4.0), "epsilon": 0.5, "delta": 1e-6, "accountant": acc,
                               "random_state": 0, **kw})


def _pca(acc, **kw):
    return DPPCA(**{"n_components": 3, "epsilon": 1.0, "delta": 1e-6, "row_norm": 5.0, "accountant": acc,
                    "random_state": 0, **kw})


def _lda(acc, **kw):
    return DPLinearDiscriminantAnalysis(**{"epsilon": 1.0, "delta": 1e-6, "row_norm": 5.0, "accountant": acc,
                                           "random_state": 0, **kw})


def _fit_and_compare(pipe, acc, *, n_features=D, expect_private=True):
    cost = pipeline_cost(pipe, n_features=n_features)
    assert acc.entries == ()  # planning charges nothing
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y)
    assert _leaves(cost.events) == _leaves(acc.events)
    assert cost.charged_epsilon == pytest.approx(acc.epsilon_spent(), rel=1e-9)
    assert cost.delta == acc.spent()[1] and cost.accountant is acc
    assert cost.private is expect_private
    assert cost.epsilon == (cost.charged_epsilon if expect_private else math.inf)
    return cost


PRIVATE_PIPELINES = {
    "scaler, pca, lda": lambda acc: make_pipeline(_scaler(acc), _pca(acc), _lda(acc, classes=[0, 1])),
    "lda with its label release": lambda acc: make_pipeline(_scaler(acc), _lda(acc)),
    "lda without adaptive clip": lambda acc: make_pipeline(_lda(acc, classes=[0, 1], adaptive_clip=False)),
    "pca centred privately, no adaptive clip": lambda acc: make_pipeline(
        _scaler(acc, with_std=False), _pca(acc, centering="private", adaptive_clip=False), _lda(acc)),
    "add/remove throughout": lambda acc: make_pipeline(
        _scaler(acc, relation="add_remove"), _pca(acc, relation="add_remove", centering="private"),
        _lda(acc, relation="add_remove", classes=[0, 1])),
    "mod_sulq, nested pipeline": lambda acc: Pipeline([
        ("prep", Pipeline([("scale", _scaler(acc)), ("pca", _pca(acc, method="mod_sulq"))])),
        ("clf", _lda(acc, classes=[0, 1]))]),
    "one estimator": lambda acc: _scaler(acc),
}


@pytest.mark.parametrize("name", list(PRIVATE_PIPELINES))
def test_planned_cost_equals_what_fitting_charges(name):
    acc = Accountant()
    cost = _fit_and_compare(PRIVATE_PIPELINES[name](acc), acc)
    assert all(step.status == "planned" for step in cost.steps)


def test_a_non_private_classifier_is_flagged_and_the_private_steps_still_counted():
    acc = Accountant()
    pipe = make_pipeline(_scaler(acc), _pca(acc), LogisticRegression())
    cost = _fit_and_compare(pipe, acc, expect_private=False)
    status = {s.name: s.status for s in cost.steps}
    assert status == {"dpstandardscaler": "planned", "dppca": "planned", "logisticregression": "not private"}
    assert cost.steps[2].epsilon == math.inf and not cost.steps[2].private
    assert "NOT private" in str(cost) and "logisticregression" in " ".join(cost.notes)


def test_a_non_private_scaler_is_flagged_and_taints_the_steps_after_it():
    acc = Accountant()
    cost = pipeline_cost(make_pipeline(StandardScaler(), _pca(acc)), n_features=D)
    assert [s.status for s in cost.steps] == ["not private", "planned"]
    assert cost.epsilon == math.inf and not cost.private and math.isfinite(cost.charged_epsilon)
    assert "without privacy" in cost.steps[1].note


def test_a_stateless_step_costs_nothing():
    acc = Accountant()
    pipe = make_pipeline(FunctionTransformer(np.tanh), _scaler(acc, bounds=(-1.0, 1.0)), "passthrough")
    cost = _fit_and_compare(pipe, acc)
    assert [s.status for s in cost.steps] == ["stateless", "planned"]


def test_a_step_not_planned_counts_its_declared_budget_an_upper_bound():
    acc = Accountant()
    pipe = make_pipeline(_scaler(acc), _pca(acc, method="noisy_power"))
    cost = pipeline_cost(pipe, n_features=D)
    assert [s.status for s in cost.steps] == ["planned", "declared budget"]
    assert "declared budget" in " ".join(cost.notes)
    pipe.fit(*_data())
    assert acc.epsilon_spent() <= cost.charged_epsilon * (1 + 1e-9)


def test_cross_validation_charges_every_fit():
    acc = Accountant()
    pipe = make_pipeline(_scaler(acc), _pca(acc), _lda(acc, classes=[0, 1]))
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cross_val_score(pipe, X, y, cv=3)
    cost = pipeline_cost(pipe, n_features=D, n_fits=3)
    # scaler 1, pca 3 (private mean, norm histogram, scatter) and lda 2 (a norm histogram, the release)
    assert len(acc.entries) == 3 * 6
    assert cost.charged_epsilon == pytest.approx(acc.epsilon_spent(), rel=1e-9)
    assert cost.charged_epsilon > pipeline_cost(pipe, n_features=D).charged_epsilon


def test_the_ceiling_is_checked_without_spending():
    one = pipeline_cost(make_pipeline(_scaler(None), _pca(None)), n_features=D)
    assert one.accountant is None and one.within_ceiling is None
    assert one.delta == pytest.approx(2e-6)  # no accountant: the sum of the steps' deltas
    ok, tight = Accountant(epsilon=2.0, delta=1e-6), Accountant(epsilon=1.0, delta=1e-6)
    assert pipeline_cost(make_pipeline(_scaler(ok), _pca(ok)), n_features=D).within_ceiling is True
    assert pipeline_cost(make_pipeline(_scaler(tight), _pca(tight)), n_features=D).within_ceiling is False
    assert ok.entries == () and tight.entries == ()


def test_steps_must_share_one_accountant():
    a, b = Accountant(), Accountant()
    with pytest.raises(ValueError, match="different accountants"):
        pipeline_cost(make_pipeline(_scaler(a), _pca(b)), n_features=D)
    with pytest.raises(ValueError, match="hold no accountant"):
        pipeline_cost(make_pipeline(_scaler(a), _pca(None)), n_features=D)


def test_relations_must_agree():
    with pytest.raises(ValueError, match="different relations"):
        pipeline_cost(make_pipeline(_scaler(None), _pca(None, relation="add_remove")), n_features=D)


def test_refusals():
    with pytest.raises(ValueError, match="n_features"):
        pipeline_cost(make_pipeline(_scaler(None), _pca(None)))  # DPPCA(method="auto") needs d
    with pytest.raises(ValueError, match="n_fits"):
        pipeline_cost(_scaler(None), n_fits=0)
    with pytest.raises(ValueError, match="GridSearchCV"):
        pipeline_cost(GridSearchCV(_scaler(None), {"epsilon": [1.0]}), n_features=D)
    with pytest.raises(ValueError, match="'epsilon'"):
        pipeline_cost(make_pipeline(_scaler(None, epsilon=-1.0)), n_features=D)
    with pytest.raises(ValueError, match="'bounds'"):
        pipeline_cost(make_pipeline(_scaler(None, bounds=None)), n_features=D)


def test_the_pipelines_page_runs_and_prints_what_it_says(capsys):
    """docs/pipelines.md: its Python blocks run in order and print the values the page states."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "pipelines.md").read_text()
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for block in re.findall(r"```python\n(.*?)```", text, re.S):
            exec(block, namespace)  # noqa: S102 - the page's own examples
    printed = capsys.readouterr().out
    first_output = re.search(r"```text\n(.*?)```", text, re.S).group(1)
    assert first_output.strip() in printed
    for stated in ("total: (1.371, 1e-05)-DP under replace_one neighbours", "1.3712 0.8\n", "2.7 True",
                   "2.7 24", "2.53", "3.03"):
        assert stated in printed, stated
