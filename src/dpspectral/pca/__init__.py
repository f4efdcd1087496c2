"""Central-model PCA mechanisms."""

from .covariance import analyze_gauss, mod_sulq, wishart
from .exponential import BinghamSampler, BinghamSamplerError, exponential_pca, ppca, sample_bingham
from .minibatch import minibatch_oja
from .power import noisy_power
from .stochastic import dp_spca, dp_vrpca

__all__ = [
    "BinghamSampler",
    "BinghamSamplerError",
    "analyze_gauss",
    "dp_spca",
    "dp_vrpca",
    "exponential_pca",
    "minibatch_oja",
    "mod_sulq",
    "noisy_power",
    "ppca",
    "sample_bingham",
    "wishart",
]
