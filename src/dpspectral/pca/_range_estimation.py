"""The constants of DP-PCA's private range estimation (Liu, Kong, Jain and Oh 2022, Algorithms 4 and 5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .._constraints import NONE, SHARE, Interval, Options, Table, check_params

__all__ = ["RANGE_ESTIMATION_FIELDS", "RangeEstimation"]

_POSITIVE = Interval(0, None, "neither")
_FIELDS: Table = {
    "histogram": Options(("laplace", "stable")), "half_width_mult": _POSITIVE, "tail_scale": _POSITIVE,
    "tail_exponent": _POSITIVE, "failure_probability": SHARE,
    "n_groups": [NONE, Interval(1, None, "left", integer=True)], "histogram_share": SHARE,
    "range_fraction": [NONE, Interval(0, 1, "neither")], "truncation": [NONE, Options(("auto", "always"))],
}


@dataclass(frozen=True)
class RangeEstimation:
    """How :func:`~dpspectral.pca.dp_pca` estimates the range of each minibatch's gradients privately.

    Every minibatch is split: ``range_fraction`` of it gives a private estimate ``Lambda_t`` of the top
    eigenvalue of the gradients' covariance (Algorithm 4, a noisy histogram over ``n_groups`` groups),
    the rest a private mean of the gradients truncated to a box of half-width ``h r`` around private
    centres, ``r = K sqrt(2 Lambda_t) log^a(b p / zeta)`` (Algorithm 5), with ``zeta =
    failure_probability / (2 T)`` over the T steps. The defaults are the library's measured choices
    (docs/algorithms/oja.md); ``dp_pca(..., range_estimation=RangeEstimation(...))`` changes them.

    Parameters
    ----------
    histogram : {"laplace", "stable"}, default="laplace"
        The histogram learner of Algorithms 4 and 5: Laplace noise on every bin (pure epsilon) or the
        stable histogram ((epsilon, delta), noise only on the occupied bins).
    half_width_mult : float, default=2.0
        h, the factor of Algorithm 5's truncation box (the paper's specification has 3).
    tail_scale : float, default=1.0
        K, the scale of Assumption A.4, the sub-Weibull tail of the gradients
        ``E exp((|u^T (A_i - Sigma) v|^2 / (K^2 lambda_1^2 gamma^2))^{1/(2a)}) <= 2``. The paper's
        Gaussian value is 4, which makes the box about 80 standard deviations wide at n = 2e5.
    tail_exponent : float, default=0.5
        a, the exponent of Assumption A.4 (the paper's Gaussian value is 1).
    failure_probability : float in (0, 1), default=0.01
        The total probability that a range estimate fails, spread over the steps (zeta above).
    n_groups : int or None, default=None
        The groups of Algorithm 4's eigenvalue histogram; None: the smallest count its analysis allows
        for the budget and zeta.
    histogram_share : float in (0, 1), default=0.5
        The share of Algorithm 5's budget spent on its coordinate histograms (the Gaussian mean gets
        the rest; ``calibration="tight"``).
    range_fraction : float in (0, 1) or None, default=None
        The share of each minibatch given to Algorithm 4; None: 0.1 under the warm-up schedule, the
        paper's halves under ``schedule="paper"``.
    truncation : {"auto", "always"} or None, default=None
        ``"always"``: Algorithms 4 and 5 run at every step (the paper). ``"auto"``: only where the
        truncation box is smaller than the public bound and Algorithm 4's winning bin is supported by
        the data; elsewhere the batch mean is released with noise from the public bound. None:
        ``"always"`` under ``schedule="paper"``, else ``"auto"``.
    """

    histogram: Literal["laplace", "stable"] = "laplace"
    half_width_mult: float = 2.0
    tail_scale: float = 1.0
    tail_exponent: float = 0.5
    failure_probability: float = 0.01
    n_groups: int | None = None
    histogram_share: float = 0.5
    range_fraction: float | None = None
    truncation: Literal["auto", "always"] | None = None

    def __post_init__(self) -> None:
        check_params(_FIELDS, {name: getattr(self, name) for name in _FIELDS}, "RangeEstimation")


#: The keywords of :func:`~dpspectral.pca.dp_pca` that became fields of :class:`RangeEstimation`, and
#: the paper's symbols of two of them (``K``, ``a``).
RANGE_ESTIMATION_FIELDS = {**{name: name for name in _FIELDS}, "K": "tail_scale", "a": "tail_exponent"}
