"""A public basis for private PCA: project every row onto a fixed public basis, release there, lift back.

With few rows, or under pure epsilon, the noise of a ``d x d`` release swamps the signal. When a public
basis ``B`` (``d x d'``, orthonormal columns, ``B^T B = I``) holds most of the data's energy, releasing
in ``d' x d'`` instead adds noise of a ``d'``-dimensional problem: for images, the first atoms of the
2-D DCT by radial frequency (:meth:`PublicBasis.dct2`); or the top right singular vectors of data the
user declares public (:meth:`PublicBasis.from_public_data`); or any orthonormal matrix
(:meth:`PublicBasis.from_matrix`). ``docs/public-basis.md`` has the measurements.

:func:`with_public_basis` wraps any registered PCA or Fisher method: it projects each row ``x -> B^T x``
before the method sees it (so before it is clipped), runs the method in ``d'`` dimensions and lifts
what it released back (components ``V -> B V``, means ``mu -> B mu``, discriminant directions
``w -> B w``, since ``w^T (B^T x) = (B w)^T x``).

Privacy
-------
The projection is a fixed per-row map chosen without the private rows; the mechanism then clips and
releases the projected rows exactly as it would any rows, so its sensitivity, events and accounting
are those of the method on ``d'`` features. An orthonormal ``B`` never lengthens a row
(``||B^T x|| <= ||x||``), so a ``row_norm`` that bounds the original rows bounds the projected ones.
The number of atoms ``d'`` is chosen from public facts only (:func:`choose_n_atoms`): n where it is
public (replace-one neighbours), epsilon, delta and k; under add/remove neighbours from a noisy count
of the rows released first, in the same privacy report (:mod:`dpspectral._basis_count`). The lift is
post-processing.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._rows import _blocks_of_array, _is_block_source, is_dask_array, is_one_shot, n_features_of
from .privacy._budget import Relation, as_relation

__all__ = ["ORTHONORMAL_TOL", "PURE_EPSILON_ATOMS", "PublicBasis", "choose_n_atoms", "with_public_basis"]

#: Largest entry of ``|B^T B - I|`` accepted as orthonormal. Over it the lifted components are not
#: orthonormal to the precision the results state; a float32 matrix of orthonormal columns passes.
ORTHONORMAL_TOL = 1e-6
#: d' under pure epsilon-DP (delta = 0): a fixed middle-sized basis that does not read n (the
#: exponential mechanism has no Gaussian multiplier for the approximate-DP rule, and its captured
#: energy is flat in d' over 24-100 atoms); ``ppca`` inside 64 DCT atoms captures 0.88 / 0.93 of all
#: of MNIST's top-10 energy at epsilon 1 / 4, within 0.06 of the best d' at every n and epsilon
#: measured (``docs/public-basis.md``, "Pure epsilon").
PURE_EPSILON_ATOMS = 64
#: Fewest atoms the approximate-DP rule chooses (and at least k).
MIN_ATOMS = 12


def _dct_matrix(n: int) -> np.ndarray:
    """The orthonormal DCT-II matrix C (n x n, rows are the basis vectors: ``C @ x`` is the transform)."""
    from scipy.fft import dct

    return np.asarray(dct(np.eye(n), type=2, norm="ortho", axis=0))


def _dct2_atoms(shape: tuple[int, ...], n_atoms: int) -> np.ndarray:
    """The first ``n_atoms`` DCT-II atoms of an image of ``shape`` (row-major pixels), by radial frequency.

    Atom (i, j) is ``outer(C_h[i], C_w[j]).ravel()``; atoms are ordered by ``(i / h)^2 + (j / w)^2``,
    ties by i then j. A 1-D shape ``(d,)`` gives the 1-D DCT by frequency.
    """
    if len(shape) == 1:
        return _dct_matrix(shape[0])[:n_atoms].T.copy()
    h, w = shape
    i, j = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    radius = (i / h) ** 2 + (j / w) ** 2
    order = np.lexsort((j.ravel(), i.ravel(), radius.ravel()))[:n_atoms]
    ch, cw = _dct_matrix(h), _dct_matrix(w)
    rows, cols = np.unravel_index(order, (h, w))
    return np.stack([np.outer(ch[a], cw[b]).ravel() for a, b in zip(rows, cols, strict=True)], axis=1)


def _check_orthonormal(B: np.ndarray, what: str) -> None:
    if B.ndim != 2 or B.shape[1] < 1:
        raise ValueError(f"{what} must be a 2-D matrix of shape (n_features, n_atoms) with n_atoms >= 1. "
                         f"Got shape {B.shape}.")
    if not np.isfinite(B).all():
        raise ValueError(f"{what} must be finite (it has a NaN or an infinite entry).")
    if B.shape[1] > B.shape[0]:
        raise ValueError(f"{what} has more columns ({B.shape[1]}) than rows ({B.shape[0]}): at most "
                         "n_features orthonormal columns exist.")
    err = float(np.max(np.abs(B.T @ B - np.eye(B.shape[1]))))
    if err > ORTHONORMAL_TOL:
        raise ValueError(f"{what} must have orthonormal columns (B^T B = I): the largest entry of "
                         f"|B^T B - I| is {err:.3g}, over the tolerance {ORTHONORMAL_TOL:g}. "
                         "Orthonormalise it first (numpy.linalg.qr).")


def _check_atoms_value(n_atoms: Any, what: str) -> None:
    if isinstance(n_atoms, str) and n_atoms == "auto":
        return
    if isinstance(n_atoms, (bool, np.bool_)) or not isinstance(n_atoms, (int, np.integer)) or n_atoms < 1:
        raise ValueError(f"The 'n_atoms' parameter of {what} must be 'auto' or an int >= 1. "
                         f"Got {n_atoms!r} instead.")


def choose_n_atoms(*, n_features: int, epsilon: float, delta: float, k: int,
                   n_samples: float | None, relation: Relation | str = "replace_one",
                   available: int | None = None) -> tuple[int, str]:
    """d' (the number of atoms kept) from public facts only, and the reason in words.

    * (epsilon, delta)-DP with n public (replace-one neighbours):
      ``d' = clip(round(4 sqrt(n / sigma)), max(12, k), d)``, with ``sigma`` the analytic Gaussian noise
      multiplier of (epsilon, delta) (:func:`dpspectral.privacy._gaussian.analytic_noise_multiplier`).
      Signal grows as n and the noise of a ``d' x d'`` release as ``sigma sqrt(d')``: a basis too large
      adds noise along atoms holding little energy, one too small loses the energy outside it.
    * pure epsilon-DP (delta = 0): :data:`PURE_EPSILON_ATOMS` (64; at least k), measured.
    * add/remove neighbours: n is private, and an approximate-DP rule that read it would leak it, so
      this function refuses (pure epsilon needs no n and is not refused); :func:`with_public_basis`
      and ``DPPCA`` then release a noisy count of the rows first (:mod:`dpspectral._basis_count`) and
      pass it here as ``n_samples`` (post-processing).

    ``available`` caps d' (a basis with fewer atoms than d). Raises ``ValueError`` before anything is
    charged.
    """
    from .privacy._gaussian import analytic_noise_multiplier

    cap = n_features if available is None else min(available, n_features)
    low = max(MIN_ATOMS, int(k))
    if delta == 0:
        d_prime = min(max(PURE_EPSILON_ATOMS, int(k)), cap)
        return d_prime, f"pure epsilon-DP: a fixed {PURE_EPSILON_ATOMS} atoms (at least k), at most {cap}"
    rel = as_relation(relation, owner="public_basis")
    if rel is not Relation.REPLACE_ONE or n_samples is None:
        why = ("n is private under add/remove neighbours" if rel is not Relation.REPLACE_ONE else
               "the number of rows is not known before reading the data (a one-shot stream)")
        raise ValueError(f"public_basis: n_atoms='auto' needs the public number of rows n, but {why}. "
                         "Give the number of atoms (e.g. PublicBasis.dct2(shape, n_atoms=64)), chosen "
                         "without looking at the data. Nothing was charged.")
    sigma = analytic_noise_multiplier(float(epsilon), float(delta))
    d_prime = int(min(max(round(4.0 * math.sqrt(float(n_samples) / sigma)), low), cap))
    return d_prime, (f"clip(round(4 sqrt(n / sigma)), {low}, {cap}) with n = {int(n_samples)} (public) and "
                     f"sigma = {sigma:.3g} (analytic Gaussian multiplier of epsilon = {epsilon:g}, "
                     f"delta = {delta:g})")


@dataclass(frozen=True, eq=False)
class PublicBasis:
    """A public orthonormal basis of the feature space, and how many of its atoms to keep.

    Build it with :meth:`dct2`, :meth:`from_matrix` or :meth:`from_public_data`; pass it as
    ``DPPCA(public_basis=...)`` or to :func:`with_public_basis`. It must not be computed from the
    private rows.

    Attributes
    ----------
    kind : {"dct2", "matrix", "public_data"}
        Where the atoms come from (recorded in the privacy report).
    n_atoms : int or "auto"
        d', the number of leading atoms kept; ``"auto"``: :func:`choose_n_atoms` at fit time.
    shape : tuple of int or None
        The image shape of a DCT basis (``prod(shape)`` must equal the number of features).
    """

    kind: str
    n_atoms: int | str
    shape: tuple[int, ...] | None = None
    _atoms: np.ndarray | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def dct2(cls, shape: Any, n_atoms: int | str = "auto") -> PublicBasis:
        """The orthonormal DCT-II of images of ``shape`` (rows are row-major pixels), by radial frequency.

        ``shape`` is ``(height, width)`` (or ``(d,)`` for 1-D signals).
        """
        try:
            shape_t = tuple(int(s) for s in shape)
        except TypeError:
            raise ValueError(f"PublicBasis.dct2: 'shape' must be (height, width) or (length,). "
                             f"Got {shape!r} instead.") from None
        if len(shape_t) not in (1, 2) or min(shape_t) < 1:
            raise ValueError(f"PublicBasis.dct2: 'shape' must be (height, width) or (length,) of positive "
                             f"sizes. Got {shape!r} instead.")
        _check_atoms_value(n_atoms, "PublicBasis.dct2")
        if n_atoms != "auto" and int(n_atoms) > math.prod(shape_t):
            raise ValueError(f"PublicBasis.dct2: n_atoms = {n_atoms} exceeds the {math.prod(shape_t)} atoms "
                             f"of shape {shape_t}.")
        return cls("dct2", n_atoms if n_atoms == "auto" else int(n_atoms), shape_t)

    @classmethod
    def from_matrix(cls, B: Any, n_atoms: int | str | None = None) -> PublicBasis:
        """A given orthonormal ``d x m`` matrix (columns in order of preference).

        ``n_atoms`` None keeps all ``m`` columns; an int keeps the first ones; ``"auto"`` chooses.
        Refused when ``|B^T B - I|`` has an entry over :data:`ORTHONORMAL_TOL`, or a NaN.
        """
        M = np.array(B, dtype=np.float64, copy=True)
        _check_orthonormal(M, "PublicBasis.from_matrix: B")
        atoms = M.shape[1] if n_atoms is None else n_atoms
        _check_atoms_value(atoms, "PublicBasis.from_matrix")
        if atoms != "auto" and int(atoms) > M.shape[1]:
            raise ValueError(f"PublicBasis.from_matrix: n_atoms = {atoms} exceeds the {M.shape[1]} columns "
                             "of B.")
        M.setflags(write=False)
        return cls("matrix", atoms if atoms == "auto" else int(atoms), None, M)

    @classmethod
    def from_public_data(cls, X_public: Any, n_atoms: int | str = "auto") -> PublicBasis:
        """The top right singular vectors of data the caller declares PUBLIC (never the private rows).

        Uncentred (the second moment of ``X_public``), in decreasing order of singular value.
        """
        from ._rows import as_numeric_2d

        X = as_numeric_2d(X_public, "PublicBasis.from_public_data")
        if not np.isfinite(X).all():
            raise ValueError("PublicBasis.from_public_data: X_public must be finite.")
        _check_atoms_value(n_atoms, "PublicBasis.from_public_data")
        _, s, vt = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)
        atoms = vt.T
        if n_atoms != "auto" and int(n_atoms) > atoms.shape[1]:
            raise ValueError(f"PublicBasis.from_public_data: n_atoms = {n_atoms} exceeds the "
                             f"{atoms.shape[1]} singular vectors of X_public (min of its rows and columns).")
        atoms.setflags(write=False)
        return cls("public_data", n_atoms if n_atoms == "auto" else int(n_atoms), None, atoms)

    @property
    def available(self) -> int | None:
        """How many atoms exist (None for a DCT before the number of features is known)."""
        return math.prod(self.shape) if self.kind == "dct2" and self.shape else (
            None if self._atoms is None else int(self._atoms.shape[1]))

    def check_features(self, n_features: int, owner: str = "public_basis") -> None:
        """Refuse a basis of another dimension than the data's ``n_features`` (before any charge)."""
        if self.kind == "dct2":
            if math.prod(self.shape or ()) != n_features:
                raise ValueError(f"{owner}: the DCT basis of image shape {self.shape} has "
                                 f"{math.prod(self.shape or ())} pixels, but the data have {n_features} "
                                 "features. Nothing was charged.")
        elif self._atoms is not None and self._atoms.shape[0] != n_features:
            raise ValueError(f"{owner}: the basis has {self._atoms.shape[0]} rows, but the data have "
                             f"{n_features} features. Nothing was charged.")

    def resolve(self, *, n_features: int, epsilon: float, delta: float, k: int,
                n_samples: float | None, relation: Relation | str = "replace_one",
                owner: str = "public_basis") -> ResolvedBasis:
        """The concrete ``d x d'`` matrix for this fit, from public facts only (refusals charge nothing)."""
        self.check_features(n_features, owner)
        if self.n_atoms == "auto":
            d_prime, why = choose_n_atoms(n_features=n_features, epsilon=epsilon, delta=delta, k=k,
                                          n_samples=n_samples, relation=relation, available=self.available)
        else:
            d_prime, why = int(self.n_atoms), "given"
        if d_prime < k:
            raise ValueError(f"{owner}: the basis keeps {d_prime} atoms, fewer than the {k} components "
                             "asked for. Keep at least k atoms. Nothing was charged.")
        if self.kind == "dct2":
            matrix = _dct2_atoms(self.shape or (n_features,), d_prime)
        else:
            matrix = np.asarray(self._atoms)[:, :d_prime]
        matrix = np.ascontiguousarray(matrix)
        matrix.setflags(write=False)
        return ResolvedBasis(self, matrix, why)

    def _named(self) -> str:
        """The basis's kind and, for an image basis, its shape (no data)."""
        return f"{self.kind} of image shape {self.shape}" if self.shape else self.kind

    def describe(self) -> str:
        """The basis in words (no data): kind, shape and atoms."""
        return f"{self._named()}, n_atoms={self.n_atoms!r}"


@dataclass(frozen=True, eq=False)
class ResolvedBasis:
    """A basis with its ``d x d'`` matrix fixed for one fit (public: it depends on public inputs only)."""

    basis: PublicBasis
    matrix: np.ndarray
    reason: str

    @property
    def n_atoms(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def n_features(self) -> int:
        return int(self.matrix.shape[0])

    def facts(self) -> dict[str, Any]:
        """Public facts for a result's diagnostics."""
        return {"kind": self.basis.kind, "shape": self.basis.shape, "n_atoms": self.n_atoms,
                "n_features": self.n_features, "n_atoms_rule": self.reason}

    def note(self) -> str:
        """The privacy report's note: the basis by kind and d'."""
        return (f"public basis: {self.basis._named()}, d' = {self.n_atoms} of {self.n_features} atoms "
                f"({self.reason}); each row was projected onto it before clipping, the release is in "
                f"{self.n_atoms} dimensions and its results are lifted back (post-processing).")

    # -- the projection of the rows ------------------------------------------------------------------

    def project(self, X: Any) -> Any:
        """``X @ B`` for any row source the mechanisms take, lazily where the source is lazy.

        A Dask array stays lazy (``X @ B`` per block); a memmap is read block by block (its pages are
        released) into the ``n x d'`` projection; an iterable of blocks is mapped block by block (a
        generator stays a generator; a callable stays a callable); a sparse matrix gives a dense
        ``n x d'`` array. Only ``n x d'`` numbers are ever held, never an ``n x d`` copy.
        """
        B = self.matrix
        if is_dask_array(X):
            return X @ B
        if _is_block_source(X):
            if callable(X) and not hasattr(X, "shape"):
                return lambda: (self._project_block(b) for b in X())
            if isinstance(X, Iterator) or is_one_shot(X):
                return (self._project_block(b) for b in X)
            return [self._project_block(b) for b in X]
        if sp.issparse(X):
            return np.asarray(sp.csr_matrix(X) @ B)
        if isinstance(X, np.memmap):
            out = np.empty((X.shape[0], B.shape[1]), dtype=np.float64)
            for a, block in _blocks_of_array(X, "public_basis", False):
                out[a:a + block.shape[0]] = np.asarray(block, dtype=np.float64) @ B
            return out
        if hasattr(X, "__array_namespace__") and not isinstance(X, np.ndarray):
            import array_api_compat

            xp = array_api_compat.array_namespace(X)
            return X @ xp.asarray(B, dtype=X.dtype, device=array_api_compat.device(X))
        arr = np.asarray(X)
        dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
        return np.asarray(arr, dtype=dtype) @ B.astype(dtype, copy=False)

    def _project_block(self, block: Any) -> Any:
        if sp.issparse(block):
            return np.asarray(sp.csr_matrix(block) @ self.matrix)
        return np.asarray(block, dtype=np.float64) @ self.matrix

    def lift(self, V: Any) -> Any:
        """``B @ V`` (components, means, directions) in the data's namespace."""
        if V is None:
            return None
        if hasattr(V, "__array_namespace__") and not isinstance(V, np.ndarray):
            import array_api_compat

            xp = array_api_compat.array_namespace(V)
            return xp.asarray(self.matrix, dtype=V.dtype, device=array_api_compat.device(V)) @ V
        return self.matrix @ np.asarray(V)


def as_public_basis(value: Any, owner: str = "public_basis") -> PublicBasis:
    """``public_basis=`` in any accepted form as a :class:`PublicBasis` (refusals charge nothing).

    Accepted: a :class:`PublicBasis`; an orthonormal ``d x d'`` matrix; ``("dct2", shape)`` or
    ``("dct2", shape, n_atoms)``.
    """
    if isinstance(value, PublicBasis):
        return value
    if isinstance(value, list):
        value = np.asarray(value)
    if isinstance(value, tuple) and value and isinstance(value[0], str):
        if value[0] != "dct2" or len(value) not in (2, 3):
            raise ValueError(f"The 'public_basis' parameter of {owner} must be a PublicBasis, an orthonormal "
                             "matrix, or ('dct2', shape[, n_atoms]). Got "
                             f"{value[0]!r} with {len(value) - 1} arguments instead.")
        return PublicBasis.dct2(value[1], *value[2:])
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") and not hasattr(value, "shape"):
        raise ValueError(f"The 'public_basis' parameter of {owner} must be a PublicBasis, an orthonormal "
                         f"matrix, or ('dct2', shape[, n_atoms]). Got {type(value).__name__} instead.")
    return PublicBasis.from_matrix(value)


# -- the wrapper around registered methods ---------------------------------------------------------------

def _n_rows_public(X: Any, options: dict[str, Any]) -> float | None:
    """n without reading any row: an array's shape, a list of blocks' shapes, or ``n_samples`` given."""
    if options.get("n_samples") is not None:
        return float(options["n_samples"])
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and not _is_block_source(X):
        n = shape[0]
        return None if isinstance(n, float) and n != n else float(n)
    if isinstance(X, (list, tuple)) and _is_block_source(X):
        return float(sum(b.shape[0] for b in X))
    return None


def _lift_subspace(result: Any, basis: ResolvedBasis) -> Any:
    """A :class:`~dpspectral.SubspaceResult` released in the basis, in the original d dimensions."""
    diagnostics = {**result.diagnostics, "public_basis": basis.facts()}
    if result.total is not None:
        # the trace of the release measures the energy of the (clipped) rows INSIDE the basis only; what
        # lies outside it is not released, so no share of the full energy can be stated
        diagnostics["released_total_in_basis"] = float(result.total)
    privacy = result.privacy
    if privacy is not None:
        privacy = dataclasses.replace(privacy, notes=(*privacy.notes, basis.note()))
    return dataclasses.replace(result, components=basis.lift(result.components),
                               mean=basis.lift(result.mean), privacy=privacy, diagnostics=diagnostics)


def _lift_gep(result: Any, basis: ResolvedBasis) -> Any:
    """A :class:`~dpspectral.GEPResult` in d dimensions: directions and whitening lift as ``w -> B w``."""
    privacy = result.privacy
    if privacy is not None:
        privacy = dataclasses.replace(privacy, notes=(*privacy.notes, basis.note()))
    return dataclasses.replace(result, vectors=basis.lift(result.vectors),
                               whitening=basis.lift(result.whitening), privacy=privacy,
                               diagnostics={**result.diagnostics, "public_basis": basis.facts()})


def _public_centre(options: dict[str, Any], basis: ResolvedBasis) -> None:
    """A public centre given in d dimensions is projected too: ``B^T (x - c) = B^T x - B^T c``."""
    c = options.get("centering")
    if c is not None and not isinstance(c, str):
        c = np.asarray(c, dtype=np.float64)
        if c.shape != (basis.n_features,):
            raise ValueError(f"public_basis: a public centre must have shape ({basis.n_features},). Got "
                             f"{c.shape}. Nothing was charged.")
        options["centering"] = c @ basis.matrix


def resolve_for(basis: PublicBasis, X: Any, k: int, options: dict[str, Any], owner: str, *,
                pure: bool = False) -> ResolvedBasis:
    """The basis of one fit on ``X``, from public facts (d, n where public, epsilon, delta, relation, k)."""
    d = n_features_of(X)
    if d is None and isinstance(X, (list, tuple)) and X:
        d = int(X[0].shape[1])
    if d is None:
        d = basis.available if basis.kind != "dct2" or basis.shape is None else math.prod(basis.shape)
        if basis._atoms is not None:
            d = int(basis._atoms.shape[0])
    epsilon = options.get("epsilon")
    delta = 0.0 if pure else options.get("delta")
    relation = options.get("relation") or "replace_one"
    if basis.n_atoms == "auto" and (epsilon is None or delta is None):
        raise ValueError(f"{owner}: n_atoms='auto' needs epsilon and delta. Nothing was charged.")
    return basis.resolve(n_features=int(d or 0), epsilon=float(epsilon or 0), delta=float(delta or 0),
                         k=int(k), n_samples=_n_rows_public(X, options), relation=relation, owner=owner)


def project_for_fit(public_basis: Any, X: Any, *, epsilon: Any, delta: Any, relation: Any, k: int,
                    owner: str) -> tuple[ResolvedBasis | None, Any]:
    """An estimator's ``public_basis`` resolved for ``X`` (public facts only) and ``X`` projected onto it.

    ``(None, X)`` without a basis. Refusals (orthonormality, dimension, d' < k, ``"auto"`` with a
    private n) come before anything is charged.
    """
    if public_basis is None:
        return None, X
    options = {"epsilon": epsilon, "delta": delta, "relation": relation}
    resolved = resolve_for(as_public_basis(public_basis, owner), X, k, options, owner)
    return resolved, resolved.project(X)


def _resolved(basis: PublicBasis | ResolvedBasis, X: Any, k: int, options: dict[str, Any], owner: str,
              pure: bool) -> ResolvedBasis:
    """``basis`` for this call: resolved now from public facts, or as the caller resolved it (checked)."""
    if not isinstance(basis, ResolvedBasis):
        return resolve_for(basis, X, k, options, owner, pure=pure)
    d = n_features_of(X)
    if d is not None:
        basis.basis.check_features(d, owner)
    if basis.n_atoms < int(k):
        raise ValueError(f"{owner}: the basis keeps {basis.n_atoms} atoms, fewer than the {k} components "
                         "asked for. Keep at least k atoms. Nothing was charged.")
    return basis


def with_public_basis(method: Any, basis: Any) -> Callable[..., Any]:
    """A registered method that runs inside a public basis: same signature, results in d dimensions.

    Parameters
    ----------
    method : str, Method or callable
        A registry name (``dpspectral.methods(task="pca")`` or ``task="gep"``), a
        :class:`~dpspectral.Method`, or a PCA function of the registry's ``"pca"`` signature.
    basis : PublicBasis, ndarray, tuple or ResolvedBasis
        :class:`PublicBasis`, an orthonormal ``d x d'`` matrix, or ``("dct2", shape[, n_atoms])``
        (or a basis already resolved for this fit by :meth:`PublicBasis.resolve`).

    Returns
    -------
    callable
        ``f(X, k, **kwargs)`` (``f(X, y, k, **kwargs)`` for a Fisher method): each row is projected
        onto the basis before the method reads it (before clipping), the method runs on ``d'``
        features, and the result comes back in the original ``n_features`` dimensions, its privacy
        report noting the basis by kind and ``d'`` (``diagnostics["public_basis"]``).

    Notes
    -----
    d' (``n_atoms="auto"``) comes from public facts only: :func:`choose_n_atoms`. A refusal (a basis
    not orthonormal, of the wrong dimension, with fewer atoms than k; ``"auto"`` with a private n)
    comes before the method runs, so nothing is charged. ``values`` and ``total`` of a PCA result are
    those of the release in the basis: ``total`` measures the energy inside the basis only (the energy
    outside it is never released), so a share of it (``DPPCA.explained_variance_ratio_``) is a share of
    the energy the basis holds.

    Examples
    --------
    >>> import numpy as np
    >>> from dpspectral import PublicBasis, with_public_basis
    >>> X = np.random.default_rng(0).normal(size=(500, 64)) / 16
    >>> run = with_public_basis("analyze_gauss", PublicBasis.dct2((8, 8), n_atoms=16))
    >>> run(X, 3, epsilon=1.0, delta=1e-6, row_norm=1.0, random_state=0).components.shape
    (64, 3)
    """
    from ._registry import Method, get_method

    entry = get_method(method, owner="with_public_basis") if isinstance(method, str) else method
    task = entry.task if isinstance(entry, Method) else "pca"
    if task not in ("pca", "gep"):
        raise ValueError(f"with_public_basis: method {entry.name!r} is a {task} method; a public basis "
                         "covers the PCA and Fisher discriminant methods (task 'pca' or 'gep').")
    function = entry.function if isinstance(entry, Method) else entry
    public = basis if isinstance(basis, ResolvedBasis) else as_public_basis(basis, "with_public_basis")
    pure = isinstance(entry, Method) and not entry.needs_delta
    owner = f"with_public_basis({getattr(entry, 'name', getattr(function, '__name__', 'method'))!r})"

    if task == "gep":
        @functools.wraps(function)
        def run_gep(X: Any, y: Any, k: int, *args: Any, **kwargs: Any) -> Any:
            resolved = _resolved(public, X, k, kwargs, owner, pure)
            return _lift_gep(function(resolved.project(X), y, k, *args, **kwargs), resolved)

        return run_gep

    @functools.wraps(function)
    def run(X: Any, k: int, *args: Any, **kwargs: Any) -> Any:
        if isinstance(public, PublicBasis) and counts_rows(public, kwargs, pure):
            return _run_with_count(function, public, X, k, args, kwargs, owner)
        resolved = _resolved(public, X, k, kwargs, owner, pure)
        _public_centre(kwargs, resolved)
        return _lift_subspace(function(resolved.project(X), k, *args, **kwargs), resolved)

    return run


def counts_rows(basis: PublicBasis | ResolvedBasis, options: dict[str, Any], pure: bool = False) -> bool:
    """Whether d' must come from a privately released count: ``"auto"`` under add/remove neighbours for
    (epsilon, delta)-DP (the pure-epsilon rule does not read n)."""
    if isinstance(basis, ResolvedBasis) or basis.n_atoms != "auto" or options.get("relation") is None:
        return False
    if pure or options.get("epsilon") is None or options.get("delta") is None or options["delta"] == 0:
        return False
    return as_relation(options["relation"], owner="public_basis") is Relation.ADD_REMOVE


def _run_with_count(function: Callable[..., Any], basis: PublicBasis, X: Any, k: int, args: tuple[Any, ...],
                    kwargs: dict[str, Any], owner: str) -> Any:
    """``n_atoms="auto"`` under add/remove: a noisy count of the rows first, d' from it, then the method
    (:mod:`dpspectral._basis_count`); one privacy report for both. Refusals charge nothing."""
    import warnings

    import dp_accounting

    from ._basis_count import ProbeAccountant, ReachedTheCharge, RowCount, count_rows, plan_count
    from .privacy._accounting import certify_release
    from .privacy._budget import PrivacyBudget
    from .privacy._guardrails import PrivacyParameterWarning
    from .privacy._template import RunSettings
    from .privacy._template import run as run_mechanism

    epsilon, delta = kwargs["epsilon"], kwargs["delta"]
    if is_one_shot(X):
        raise ValueError(f"{owner}: n_atoms='auto' under add/remove neighbours releases a count of the rows "
                         "first and then reads them again, which a one-shot stream cannot do. Give the "
                         "number of atoms, or a list of blocks. Nothing was charged.")
    budget = PrivacyBudget(float(epsilon), float(delta))
    relation = as_relation(kwargs["relation"], owner=owner)
    d = n_features_of(X)
    if d is None and isinstance(X, (list, tuple)) and X:
        d = int(X[0].shape[1])
    if d is None:
        raise ValueError(f"{owner}: the number of features must be known. Nothing was charged.")
    cap = min(basis.available or int(d), int(d))
    widest = PublicBasis(basis.kind, cap, basis.shape, basis._atoms).resolve(
        n_features=int(d), epsilon=1.0, delta=0.0, k=int(k), n_samples=None, owner=owner)
    count = plan_count(budget, relation)
    rest = dict(kwargs, epsilon=count.rest.epsilon, delta=count.rest.delta)
    probe = dict(rest, accountant=ProbeAccountant(),
                 random_state="secure" if kwargs.get("random_state") == "secure" else 0)
    _public_centre(probe, widest)
    try:  # the method's own refusals (options, k, the plan), stopped at its charge: nothing drawn
        function(widest.project(X), k, *args, **probe)
    except ReachedTheCharge:
        pass
    row_norm = kwargs.get("row_norm") if kwargs.get("on_norm_violation") == "raise" else None
    rows = count_rows(X, widest.matrix, row_norm, owner)  # every row read and checked, before the charge
    cost = (dp_accounting.GaussianDpEvent(count.rest_multiplier),)  # the method's, checked up front
    with warnings.catch_warnings():  # the count's report alone: the combined one below warns
        warnings.simplefilter("ignore", PrivacyParameterWarning)
        noisy, stream = run_mechanism(RowCount(owner, cost, rows), count, X,
                                      RunSettings(kwargs.get("accountant"), kwargs.get("random_state")))
    n_released = max(float(noisy), 1.0)
    d_prime, why = choose_n_atoms(n_features=int(d), epsilon=count.rest.epsilon, delta=count.rest.delta,
                                  k=int(k), n_samples=n_released, available=basis.available)
    why = why.replace(f"n = {int(n_released)} (public)",
                      f"n = {int(n_released)} (a noisy count: n is private under add/remove)")
    resolved = ResolvedBasis(basis, np.ascontiguousarray(widest.matrix[:, :d_prime]), why)
    resolved.matrix.setflags(write=False)
    rest["random_state"] = stream
    _public_centre(rest, resolved)
    with warnings.catch_warnings():  # the method's share of the budget: the report below warns once
        warnings.simplefilter("ignore", PrivacyParameterWarning)
        result = function(resolved.project(X), k, *args, **rest)
    privacy = result.privacy
    if privacy is not None:
        privacy = certify_release([*count.events, *privacy.events], mechanism=privacy.mechanism,
                                  budget=budget, relation=relation, calibration=privacy.calibration,
                                  noise_source=privacy.noise_source, notes=(*privacy.notes, count.note()),
                                  stacklevel=4)
        result = dataclasses.replace(result, privacy=privacy)
    return _lift_subspace(result, resolved)

