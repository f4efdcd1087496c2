"""Distributed private PCA: DPdisPCA (Imtiaz and Sarwate, ICASSP 2018) on in-process and Dask engines.

* :func:`dpdispca`: the protocol (site releases, aggregation, faults); :func:`pooled_pca` and
  :func:`local_pca`: the paper's baselines; ``variant="full"``: sites send their noisy ``A_hat_s``.
* :class:`DistributedDPPCA`: the scikit-learn style estimator (Dask by default).
* :mod:`.site`, :mod:`.aggregator`: the two sides of the protocol; :mod:`.engines`: where sites run.
* Through the release pipeline: every site's releases are a
  :class:`~dpspectral.privacy._pipeline.ReleasePlan` built from public inputs
  (:func:`site_release_plan`); the run is charged once, before dispatch; each site draws its noise
  through its plan from its own source (``random_state="secure"``: each site's OS entropy).

See ``docs/algorithms/distributed.md`` for the sensitivity derivation, calibration and fault model.
"""

from __future__ import annotations

from ._aggregator import Aggregate, aggregate, site_weights
from ._engines import DaskEngine, Engine, InProcessEngine, SiteOutcome
from ._estimator import DistributedDPPCA
from ._protocol import (
    DistributedResult,
    SiteFailureError,
    SiteFailurePolicy,
    SiteFailureWarning,
    SiteReport,
    dpdispca,
    local_pca,
    pooled_pca,
    spawn_site_seeds,
)
from ._secure import SecureAggregationError
from ._site import SitePayload, SitePlan, plan_site_release, site_release_plan, site_step

__all__ = [
    "Aggregate",
    "DaskEngine",
    "DistributedDPPCA",
    "DistributedResult",
    "Engine",
    "InProcessEngine",
    "SecureAggregationError",
    "SiteFailureError",
    "SiteFailurePolicy",
    "SiteFailureWarning",
    "SiteOutcome",
    "SitePayload",
    "SitePlan",
    "SiteReport",
    "aggregate",
    "dpdispca",
    "local_pca",
    "plan_site_release",
    "pooled_pca",
    "site_release_plan",
    "site_step",
    "site_weights",
    "spawn_site_seeds",
]


# The implementation modules are private; their old public paths keep working for one release.
from .._moved import register_moved_modules  # noqa: E402

register_moved_modules(
    __name__,
    {
        "aggregator": "_aggregator",
        "engines": "_engines",
        "estimator": "_estimator",
        "protocol": "_protocol",
        "site": "_site",
    },
)
