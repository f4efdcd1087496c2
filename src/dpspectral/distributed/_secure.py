"""Secure aggregation for DPdisPCA: every site adds a share of the pooled noise and masks its message.

``dpdispca(..., aggregation="secure")`` replaces the independent releases of the paper's protocol (each
site adds the noise its own release needs, so the aggregate carries S times the pooled noise variance)
by a sum that only the sites together can form. It runs in two rounds on the same engine:

1. **Keys** (:func:`advertise_step`, at every site): the site checks its rows (finite, within the bound
   with ``on_norm_violation="raise"``, at least one row) and the public plan it received, draws an
   X25519 key pair from its own OS entropy, keeps the private key where it runs, and sends back only its
   32-byte public key, its D, its N_s (public under replace-one) and a digest of the plan. A site whose
   rows are bad is left out here, before any mask is fixed and before anything is charged; sites that
   disagree on D or on the plan stop the round before the charge, named.
2. **Masked messages** (:func:`message_step`): the aggregator charges the ledger, then sends every
   contributing site the public keys, its weight and the noise share. Site s computes the packed upper
   triangle of ``c_s S_s`` (``c_s = w_s / N_s``), rounds it to the fixed-point grid ``g``, adds Gaussian
   noise of variance ``sigma^2 / S'`` (``S'`` contributing sites) through its release plan, encodes the
   result as integers modulo ``2**64`` and adds, for every neighbour j in the masking graph, the mask of
   the pair: ``+PRG(k_sj)`` when ``s < j``, ``-PRG(k_sj)`` when ``s > j``, where ``k_sj`` is HKDF-SHA256 of
   the X25519 shared secret (salted by the round's public identifier) and the PRG is the ChaCha20
   keystream. The masks cancel in the sum modulo ``2**64``; the aggregator (:func:`unmask`) sees the
   masked messages, adds them and decodes ``sum_s c_s S_s + E`` with ``E`` of variance ``sigma^2`` (the
   pooled mechanism's noise), then releases its top-K eigenvectors.

A site that does not answer in round 2 ends the round with a refusal (:class:`SecureAggregationError`):
the other sites' messages carry masks shared with the missing site, which nobody else can remove, so
nothing about them can be decoded; the run stays charged and is marked failed.

Privacy
-------
Relation: replace-one (``N_s`` public), on the rows of every site. Against the aggregator (who sees the
masked messages and their sum): each message is its integer vector plus a sum of ChaCha20 keystreams
keyed by secrets the aggregator does not hold, so it is computationally indistinguishable from uniform
on ``Z_{2**64}^m``; the only function of the data it can read is the sum ``T = sum_s q_s + sum_s Z_s``,
with ``q_s = round(c_s upper(S_s) / g)``. A neighbour changes one site's rows, so ``sum_s c_s upper(S_s)``
moves by at most ``Delta = max_s c_s sqrt(2) C^2`` in L2 (``||x x^T - y y^T||_F <= sqrt(2) C^2``; ``Delta``
widened for the floating-point rounding of the computed ``c_s upper(S_s)``, :func:`quantisation`), and its
rounding by at most ``Delta + g sqrt(m)`` (``m = D (D + 1) / 2`` coordinates, each rounded to within
``g / 2``). The sites' noises sum to one Gaussian of standard deviation ``sigma = s(epsilon, delta)
(Delta + g sqrt(m))``, ``s`` the multiplier of the library's Analyze Gauss plan (the analytic Gaussian
mechanism on the exact Gaussian-DP accountant), so the sum is exactly the pooled mechanism's release
(event ``GaussianDpEvent(s)``). Rounding: the statistic is on the grid before the noise is added, so
rounding the noisy value to the grid touches only the noise, which does not depend on the data. With
``random_state="secure"`` each site draws exact discrete Gaussians on the grid ``g`` (``sigma_share / g >=
2**30``, :class:`~dpspectral.privacy._noise.SecureNoise`); their sum is a distributed discrete Gaussian
whose divergence from one discrete Gaussian of variance ``sigma^2`` is negligible at that ratio (Kairouz,
Liu and Steinke, ICML 2021, Theorem 1), and the seeded source's rounded floating-point shares are a
labelled research option as everywhere in the library.

Against a coalition: sites that share their noise and masks with the aggregator can subtract their own
messages. When the coalition isolates one honest site in the masking graph (every other site, or all of
its neighbours), the coalition reads that site's ``c_s upper(S_s)`` with its own share of the noise only,
variance ``sigma^2 / S'``: that site keeps the guarantee of ``GaussianDpEvent(s / sqrt(S'))``
(:func:`coalition_epsilon`), much weaker than the claim. Honest sites that stay connected keep the
noise of all of them (``m`` connected honest sites: multiplier ``s sqrt(m / S')``).

Overflow: the decoded sum is exact when its absolute value is below ``2**52 g`` (exact float64 integers;
the ring has ``2**63``). Its entries are at most ``C^2 sum_s c_s N_s = C^2`` (the weights sum to one)
plus the rounding (``S' g / 2``) plus the noise, which exceeds ``64 sigma`` with probability below
``exp(-2000)``; :func:`quantisation` refuses, before the charge, a plan whose bound does not fit.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import struct
import threading
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np

from ..privacy._accounting import epsilon_of
from ..privacy._budget import Relation
from ..privacy._clipping import sensitivity_norm
from ..privacy._noise import grid
from ..privacy._pipeline import NoisyRelease, ReleasePlan
from ..privacy._rounding import Summation, statistic_error
from ..privacy._template import charged_elsewhere
from ._site import (
    _REPORTABLE,
    GENERIC_FAILURE,
    SiteInputError,
    SitePlan,
    SiteStepError,
    _site_scatter,
    pack_upper,
)

__all__ = [
    "KeyAdvert",
    "MASK_HALF_DEGREE",
    "MaskedMessage",
    "SecureAggregationError",
    "SecureRound",
    "advertise_step",
    "coalition_epsilon",
    "masking_neighbours",
    "message_step",
    "plan_digest",
    "quantisation",
    "require_cryptography",
    "unmask",
]

#: Each site masks with at most ``2 * MASK_HALF_DEGREE`` others (a circulant graph on the contributing
#: sites; the complete graph when there are at most ``2 * MASK_HALF_DEGREE + 1``): the masking work of a
#: site stays bounded as S grows, and isolating a site takes a coalition of all its neighbours.
MASK_HALF_DEGREE = 16
#: Bytes of an X25519 public key.
KEY_BYTES = 32
#: The decoded sum must stay below ``2**SUM_BITS`` grid steps (exact integers in float64).
SUM_BITS = 52
_HKDF_INFO = b"dpspectral secure aggregation v1"

#: Private keys of the rounds in progress, held where the site's step runs (never sent anywhere).
_SITE_KEYS: dict[tuple[bytes, int], Any] = {}
_KEYS_LOCK = threading.Lock()


class SecureAggregationError(RuntimeError):
    """A round of secure aggregation was refused.

    A site was missing in round 2, or a message was malformed; the message names the site, never its
    data.
    """


def require_cryptography(owner: str) -> None:
    """Raise ``ImportError`` with the install line when the ``cryptography`` package is missing."""
    try:
        import cryptography  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise ImportError(f"{owner}: aggregation='secure' needs the 'cryptography' package: pip install "
                          "'dpspectral[secure]'. Nothing was charged.") from exc


def plan_digest(plan: SitePlan) -> str:
    """SHA-256 of the public settings every site must share (D, relation, bound, norm rule)."""
    text = repr((plan.n_features, plan.relation.value, float(plan.row_norm), plan.on_norm_violation))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class KeyAdvert:
    """Round 1's message of one site: public facts and its public key (bytes), nothing of its rows."""

    site: int
    public_key: bytes
    n_features: int
    n_samples: int
    digest: str

    @property
    def nbytes(self) -> int:
        """Bytes sent: the key, D and N_s (8 bytes each) and the 32-byte digest."""
        return len(self.public_key) + 16 + 32


@dataclass(frozen=True)
class MaskedMessage:
    """Round 2's message of one site: its masked integer vector, little-endian ``uint64`` bytes."""

    site: int
    data: bytes

    @property
    def nbytes(self) -> int:
        """Bytes sent."""
        return len(self.data)


@dataclass(frozen=True)
class SecureRound:
    """What the aggregator sends every contributing site in round 2 (public).

    Attributes
    ----------
    site_plan : SitePlan
        The settings checked in round 1 (D, relation, bound).
    share_plan : ReleasePlan
        One release ``"share"``: the site's Gaussian noise share (scale ``sigma / sqrt(S')``) on the
        rounded ``c_s upper(S_s)``, with the sum's sensitivity ``Delta + g sqrt(m)``.
    round_id : bytes
        A fresh public identifier, the HKDF salt: masks are never reused across rounds.
    public_keys : dict of int -> bytes
        The contributing sites' public keys.
    coefficients : dict of int -> float
        ``c_s = w_s / N_s``.
    step : float
        The fixed-point grid ``g``.
    """

    site_plan: SitePlan
    share_plan: ReleasePlan
    round_id: bytes
    public_keys: dict[int, bytes]
    coefficients: dict[int, float]
    step: float

    @property
    def sites(self) -> list[int]:
        """The contributing sites, in order."""
        return sorted(self.public_keys)

    @property
    def n_features(self) -> int:
        """D (checked in round 1)."""
        assert self.site_plan.n_features is not None
        return int(self.site_plan.n_features)


def masking_neighbours(sites: list[int], site: int, half_degree: int = MASK_HALF_DEGREE) -> list[int]:
    """The sites that ``site`` shares a mask with: all others when there are at most
    ``2 half_degree + 1`` sites, else its ``half_degree`` successors and predecessors on the circle of
    the sites in order (a public circulant graph, 2 half_degree-regular)."""
    ordered = sorted(sites)
    n = len(ordered)
    if n <= 2 * half_degree + 1:
        return [j for j in ordered if j != site]
    p = ordered.index(site)
    return sorted({ordered[(p + o) % n] for o in range(-half_degree, half_degree + 1) if o != 0})


def quantisation(coefficients: dict[int, float], multiplier: float, row_norm: float, n_features: int,
                 owner: str, n_samples: dict[int, int] | None = None) -> tuple[float, float, float]:
    """``(step g, sensitivity Delta + g sqrt(m), share std)`` of a round, from public inputs.

    ``Delta = max_s c_s sqrt(2) C^2`` (replace-one), widened for the rounding of the computed
    ``c_s upper(S_s)`` of the site that changes (``n_samples``: each site's public N_s): ``S_s`` summed by
    any path, Dask's partials included (at most one per row: ``h <= 2 N_s``), then scaled by the computed
    ``c_s / g`` (two roundings); terms ``C^2``: ``Delta + 2 max_s c_s gamma_(2 N_s + 3) N_s C^2``
    (:mod:`dpspectral.privacy._rounding`). The pooled noise is ``multiplier (Delta + g sqrt(m))`` and
    each of the ``S'`` sites adds ``1 / sqrt(S')`` of it; ``g = grid(share std before the rounding
    term)``, the secure noise source's grid for that scale. Refuses (``ValueError``, nothing charged)
    when the decoded sum could leave ``2**52`` grid steps (module docstring: overflow).
    """
    n_sites = len(coefficients)
    m = n_features * (n_features + 1) // 2
    delta = max(coefficients.values()) * math.sqrt(2.0) * row_norm**2
    if n_samples is not None:
        term = sensitivity_norm(row_norm) ** 2
        delta += 2.0 * max(c * statistic_error(Summation(partials=n_samples[s], followed_by=2), n_samples[s],
                                               term, kind="products") for s, c in coefficients.items())
    g = grid(multiplier * delta / math.sqrt(n_sites))
    sensitivity = delta + g * math.sqrt(m)
    share = multiplier * sensitivity / math.sqrt(n_sites)
    if grid(share) != g:  # the rounding term crossed a power of two: the share's grid is coarser
        g = grid(share)
        sensitivity = delta + g * math.sqrt(m)
        share = multiplier * sensitivity / math.sqrt(n_sites)
    # the entries of sum_s c_s S_s are at most C^2 sum_s c_s N_s = C^2 sum_s w_s = C^2
    bound = row_norm**2 + n_sites * g / 2 + 64 * share * math.sqrt(n_sites)
    if not bound / g < 2.0**SUM_BITS:
        raise ValueError(f"{owner}: aggregation='secure' cannot encode this sum in 64-bit fixed point (the "
                         "noise is too small against the bound on the rows: the sum could overflow). Use "
                         "fewer rows per unit of noise or aggregation='independent'. Nothing was charged.")
    return g, sensitivity, share


def share_plan(share: float, sensitivity: float, multiplier: float) -> ReleasePlan:
    """One site's plan in round 2: its noise share on the rounded statistic (not charged at the site:
    the aggregator charges the sum's event, ``GaussianDpEvent(multiplier)``, before round 2)."""
    return ReleasePlan("dpdispca secure share", Relation.REPLACE_ONE,
                       (dp_accounting.GaussianDpEvent(multiplier),),
                       (NoisyRelease("share", "gaussian", float(share), float(sensitivity)),))


def coalition_epsilon(multiplier: float, n_sites: int, delta: float) -> float:
    """The epsilon one honest site keeps against a coalition of every other site and the aggregator:
    its own noise share only, ``GaussianDpEvent(multiplier / sqrt(n_sites))``, at ``delta``."""
    return float(epsilon_of([dp_accounting.GaussianDpEvent(multiplier / math.sqrt(n_sites))], delta))


# ---------------------------------------------------------------------------------------------------
# the site's two steps


def _guarded(owner: str, body: Any) -> Any:
    """Run ``body()``; the library's data-independent errors pass, any other becomes a generic text."""
    try:
        return body()
    except _REPORTABLE:
        raise
    except Exception:  # its text may describe the rows: it stays at the site
        raise SiteStepError(f"{owner}: {GENERIC_FAILURE}.") from None


def advertise_step(data: Any, plan: SitePlan, seed: Any, site: int) -> KeyAdvert:
    """Round 1 at site ``site``: check the rows, draw a key pair (OS entropy), keep the private key here.

    Privacy
    -------
    Nothing is released: the public key does not depend on the data, D and N_s are public under
    replace-one, and a failure says the kind of problem only (like every site step). The private key
    stays in this process (``_SITE_KEYS``) for :func:`message_step`.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    owner = f"DPdisPCA site {site}"

    def body() -> KeyAdvert:
        _, n, d = _site_scatter(data, plan, owner)
        key = X25519PrivateKey.generate()
        public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        with _KEYS_LOCK:
            _SITE_KEYS[(plan_digest(plan).encode() + public, site)] = key
        return KeyAdvert(site=site, public_key=public, n_features=int(d), n_samples=int(n),
                         digest=plan_digest(plan))

    return _guarded(owner, body)  # type: ignore[no-any-return]


def _mask(shared: bytes, salt: bytes, i: int, j: int, m: int) -> np.ndarray:
    """The pair (i, j)'s mask: HKDF-SHA256 of the shared secret, then m words of ChaCha20 keystream."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    a, b = min(i, j), max(i, j)
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt,
               info=_HKDF_INFO + struct.pack(">QQ", a, b)).derive(shared)
    stream = Cipher(algorithms.ChaCha20(key, bytes(16)), mode=None).encryptor().update(bytes(8 * m))
    return np.frombuffer(stream, dtype="<u8")


def message_step(data: Any, rnd: SecureRound, seed: Any, site: int) -> MaskedMessage:
    """Round 2 at site ``site``: the rounded ``c_s upper(S_s)`` plus its noise share, masked (None for
    a site left out in round 1: the engine runs the step at every site, so each lands where round 1 ran).

    Privacy
    -------
    The noise share is drawn through ``rnd.share_plan`` from the site's own source (its child
    ``SeedSequence``, or OS entropy with exact discrete samplers for ``"secure"``), after the
    aggregator charged the sum's event. What leaves the site is masked (module docstring).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    owner = f"DPdisPCA site {site}"
    if site not in rnd.public_keys:  # left out in round 1: nothing to send
        return None  # type: ignore[return-value]

    def body() -> MaskedMessage:
        own = rnd.public_keys[site]
        with _KEYS_LOCK:
            key = _SITE_KEYS.pop((plan_digest(rnd.site_plan).encode() + own, site), None)
        if key is None:
            raise SiteStepError(f"{owner}: its private key for this round is not held where its step ran.")
        mine = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        if mine != own:
            raise SiteStepError(f"{owner}: the round's public key for this site is not its own.")
        scatter, n, d = _site_scatter(data, rnd.site_plan, owner)
        if d != rnd.n_features:
            raise SiteInputError(f"{owner} has {d} features; the round has {rnd.n_features}.")
        g = rnd.step
        q = np.rint(pack_upper(scatter) * (rnd.coefficients[site] / g))
        with charged_elsewhere(rnd.share_plan, rnd.site_plan.noise_source(seed)) as releaser:
            noisy = releaser.add("share", q * g)
        words = np.rint(np.asarray(noisy) / g).astype(np.int64).view(np.uint64)
        m = words.shape[0]
        for j in masking_neighbours(rnd.sites, site):
            shared = key.exchange(X25519PublicKey.from_public_bytes(rnd.public_keys[j]))
            mask = _mask(shared, rnd.round_id, site, j, m)
            if site < j:
                words = words + mask
            else:
                words = words - mask
        return MaskedMessage(site=site, data=words.astype("<u8").tobytes())

    return _guarded(owner, body)  # type: ignore[no-any-return]


def new_round_id() -> bytes:
    """A fresh public round identifier (16 bytes of OS entropy)."""
    return secrets.token_bytes(16)


def check_advert(advert: Any, site: int, digest: str, owner: str) -> KeyAdvert:
    """A round-1 message well formed (its type, a valid X25519 key, the shared plan), or the refusal
    naming the site (never its data)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    if not isinstance(advert, KeyAdvert) or advert.site != site or not isinstance(advert.public_key, bytes) \
            or len(advert.public_key) != KEY_BYTES:
        raise SecureAggregationError(f"{owner}: site {site} sent a malformed key message; the round was "
                                     "refused before anything was charged.")
    try:
        X25519PublicKey.from_public_bytes(advert.public_key)
    except ValueError:
        raise SecureAggregationError(f"{owner}: site {site} sent a malformed public key; the round was "
                                     "refused before anything was charged.") from None
    if advert.digest != digest:
        raise SecureAggregationError(f"{owner}: site {site} ran with other public parameters than the "
                                     "aggregator's; the round was refused before anything was charged.")
    return advert


def unmask(messages: dict[int, Any], rnd: SecureRound, owner: str) -> np.ndarray:
    """The aggregator: add the masked messages modulo ``2**64`` and decode the packed noisy sum.

    Every contributing site's message must be present and exactly ``8 m`` bytes; otherwise the round is
    refused (:class:`SecureAggregationError` naming the site, never its data).

    Privacy
    -------
    Reads only the masked messages; the result is the sum's release (post-processing of it).
    """
    m = rnd.n_features * (rnd.n_features + 1) // 2
    total = np.zeros(m, dtype=np.uint64)
    for s in rnd.sites:
        msg = messages.get(s)
        if msg is None:
            raise SecureAggregationError(
                f"{owner}: site {s} did not send its masked message; its masks cannot be removed, so the "
                "round was refused and nothing was released (it stays charged).")
        if not isinstance(msg, MaskedMessage) or msg.site != s or not isinstance(msg.data, bytes) \
                or len(msg.data) != 8 * m:
            raise SecureAggregationError(
                f"{owner}: site {s} sent a malformed share (not {8 * m} bytes of masked words); the round "
                "was refused and nothing was released (it stays charged).")
        total += np.frombuffer(msg.data, dtype="<u8")
    return total.view(np.int64).astype(np.float64) * rnd.step
