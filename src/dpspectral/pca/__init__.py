"""Central-model PCA mechanisms."""

from .covariance import analyze_gauss, mod_sulq, wishart

__all__ = ["analyze_gauss", "mod_sulq", "wishart"]
