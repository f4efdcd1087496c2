"""Central-model PCA mechanisms."""

from .._options import AdaptiveClip
from ._covariance import analyze_gauss, mod_sulq, wishart
from ._exponential import (
    BinghamSampler,
    BinghamSamplerError,
    EpsilonSplit,
    exponential_pca,
    ppca,
    sample_bingham,
)
from ._minibatch import minibatch_oja
from ._oja import dp_pca, oja, private_oja
from ._power import noisy_power
from ._range_estimation import RangeEstimation
from ._schedule import WarmupSchedule
from ._stochastic import dp_spca, dp_vrpca

__all__ = [
    "AdaptiveClip",
    "BinghamSampler",
    "BinghamSamplerError",
    "EpsilonSplit",
    "RangeEstimation",
    "WarmupSchedule",
    "analyze_gauss",
    "dp_pca",
    "dp_spca",
    "dp_vrpca",
    "exponential_pca",
    "minibatch_oja",
    "mod_sulq",
    "noisy_power",
    "oja",
    "ppca",
    "private_oja",
    "sample_bingham",
    "wishart",
]


# The implementation modules are private; their old public paths keep working for one release.
from .._moved import register_moved_modules  # noqa: E402

register_moved_modules(
    __name__,
    {
        "covariance": "_covariance",
        "exponential": "_exponential",
        "lr_search": "_lr_search",
        "minibatch": "_minibatch",
        "oja": "_oja",
        "power": "_power",
        "stochastic": "_stochastic",
    },
)
