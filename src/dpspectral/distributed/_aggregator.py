"""The aggregator side of DPdisPCA (Imtiaz and Sarwate 2018, Algorithm 1, steps 9-11).

The aggregator is not trusted: it sees only what the sites released (their proxies ``P_s`` or noisy
``A_hat_s``) and public facts (D, and N_s under replace-one neighbours). It forms

    ``A_c = sum_s w_s P_s P_s^T``      (``variant="proxy"``; the paper's ``w_s = 1/S``)
    ``A_c = sum_s w_s A_hat_s``        (``variant="full"``)

and releases the top-K eigenvectors ``V_K`` of ``A_c``. Everything here is post-processing of the sites'
releases, so it costs no privacy.

Weights
-------
``"equal"`` (the paper): ``w_s = 1 / S'`` over the S' sites that contributed. ``A_c`` then estimates the
*average of the sites' second-moment matrices*, which is the pooled ``A = X^T X / N`` only when every site
holds the same number of rows.

``"size"``: ``w_s = N_s / N'`` (``N'`` the rows of the contributing sites), so ``A_c`` estimates the pooled
``A`` itself whatever the sizes. Under replace-one neighbours ``N_s`` is public; under add/remove the
sites release unnormalised noisy scatters and the aggregator simply adds them (no count needed), or uses
their released noisy counts when counts were released. With size weights every site's noise enters
``A_c`` with the same standard deviation (``w_s sigma / N_s = sigma / N'``), whereas equal weights let the
noise of small sites dominate.

An array of public weights (one per site, chosen without looking at the data) is also accepted; it is
renormalised over the contributing sites.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._linalg import fix_signs, top_k_eigh
from ._site import SitePayload, Spectrum, site_eigh, top_k_of_eigh, unpack_upper

__all__ = ["Aggregate", "aggregate", "site_weights"]


@dataclass(frozen=True)
class Aggregate:
    """The aggregator's release and the facts needed to put its eigenvalues on a common scale.

    Attributes
    ----------
    components : ndarray of shape (D, K)
        ``V_K``: orthonormal, by decreasing eigenvalue of ``A_c`` (by magnitude for ``spectrum="svd"``
        with ``variant="full"``), signs fixed.
    values : ndarray of shape (K,)
        The eigenvalues of ``A_c`` along ``components``.
    trace : float
        ``tr(A_c)``.
    weights : dict of int -> float
        ``w_s`` per contributing site.
    normalised : bool
        Whether ``A_c`` is on the scale of ``X^T X / N`` (True) or of the scatter ``X^T X`` (False).
    """

    components: np.ndarray
    values: np.ndarray
    trace: float
    weights: dict[int, float]
    normalised: bool


def site_weights(payloads: Sequence[SitePayload], weighting: Any, owner: str = "DPdisPCA") -> np.ndarray:
    """Aggregation weights of the payloads (in the order given), summing to 1 (or all 1 for scatters).

    Parameters
    ----------
    payloads : sequence of SitePayload
        The contributing sites.
    weighting : {"equal", "size"} or array-like of shape (n_sites,)
        See the module docstring. An array is indexed by the payloads' ``site``.

    Privacy
    -------
    Post-processing: the weights read only released values and public facts (``N_s`` under replace-one,
    the released noisy counts otherwise, or public weights chosen without the data).
    """
    if not payloads:
        raise ValueError(f"{owner}: no site contributed; nothing to aggregate.")
    normalised = {p.normalised for p in payloads}
    if len(normalised) != 1:
        raise ValueError(f"{owner}: the sites released matrices on different scales.")
    if isinstance(weighting, str):
        if weighting == "equal":
            if not payloads[0].normalised:
                raise ValueError(
                    f"{owner}: weighting='equal' needs every site's A_s = S_s / N_s, but the sites released "
                    "unnormalised scatters (add/remove neighbours without a noisy count)."
                )
            return np.full(len(payloads), 1.0 / len(payloads))
        if weighting == "size":
            if not payloads[0].normalised:
                return np.ones(len(payloads))  # a sum of scatters is the pooled scatter
            sizes = np.array([p.n_samples if p.n_samples is not None else max(p.noisy_count or 0.0, 0.0)
                              for p in payloads], dtype=float)
            if not sizes.sum() > 0:
                return np.full(len(payloads), 1.0 / len(payloads))
            return sizes / sizes.sum()
        raise ValueError(f"The 'weighting' parameter of {owner} must be 'equal', 'size' or an array of "
                         f"public per-site weights. Got {weighting!r} instead.")
    w_all = np.asarray(weighting, dtype=float)
    w = np.array([w_all[p.site] for p in payloads])
    if not payloads[0].normalised:
        raise ValueError(
            f"{owner}: explicit weights apply to the sites' A_s = S_s / N_s, but the sites released "
            "unnormalised scatters (add/remove neighbours without a noisy count); pass release_count=True."
        )
    if not w.sum() > 0:
        raise ValueError(f"The 'weighting' of {owner} gives the contributing sites a total weight of "
                         f"{w.sum()!r}; it must be > 0.")
    return w / w.sum()


def aggregate(payloads: Sequence[SitePayload], k: int, *, weighting: Any = "equal",
              spectrum: Spectrum = "svd", owner: str = "DPdisPCA") -> Aggregate:
    """``V_K`` of ``A_c`` from the contributing sites' payloads (all of one variant).

    The payloads are combined in order of their site index, so the result does not depend on the order
    in which they arrived.

    Privacy
    -------
    Post-processing of the sites' releases (module docstring): no cost, no noise drawn here.
    """
    ordered = sorted(payloads, key=lambda p: p.site)
    w = site_weights(ordered, weighting, owner)
    d = ordered[0].n_features
    variant = ordered[0].variant
    if variant == "proxy":
        P = np.hstack([np.sqrt(wi) * p.matrix for wi, p in zip(w, ordered, strict=True)])
        m = P.shape[1]
        trace = float(np.sum(P * P))
        if k <= m < d:
            # A_c = P P^T: its top-k eigenpairs are P's top-k left singular pairs (cheaper for m < d).
            U, sv, _ = np.linalg.svd(P, full_matrices=False)
            values, vectors = sv[:k] ** 2, fix_signs(U[:, :k])
        else:
            values, vectors = top_k_eigh(P @ P.T, k)
    else:
        A_c = np.zeros((d, d))
        for wi, p in zip(w, ordered, strict=True):
            A_c += wi * unpack_upper(p.matrix, d)
        trace = float(np.trace(A_c))
        if spectrum == "svd":
            values, vectors = top_k_of_eigh(*site_eigh(A_c), k, "svd")
        else:
            values, vectors = top_k_eigh(A_c, k)
    return Aggregate(components=vectors, values=values, trace=trace,
                     weights={p.site: float(wi) for wi, p in zip(w, ordered, strict=True)},
                     normalised=ordered[0].normalised)
