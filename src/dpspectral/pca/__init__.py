"""Central-model PCA mechanisms."""

from .covariance import analyze_gauss, mod_sulq, wishart
from .power import noisy_power
from .stochastic import dp_spca, dp_vrpca

__all__ = ["analyze_gauss", "dp_spca", "dp_vrpca", "mod_sulq", "noisy_power", "wishart"]
