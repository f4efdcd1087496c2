"""The sketch options of Upadhyay's factorizations, passed as one value: ``sketch=Sketch(...)``."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal

from .._constraints import NONE, SHARE, Constraint, Interval, Options, Types, check_params
from .._options import folded
from ._sketches import SketchSizes, sketch_sizes

__all__ = ["SKETCH_KEYWORDS", "SKETCH_OPTION", "SKETCH_SEED", "Sketch", "sketch_keywords", "sketch_options",
           "sketch_plan"]

#: A public sketch seed: None (fresh OS entropy) or a non-negative integer.
SKETCH_SEED: list[Constraint] = [NONE, Interval(0, None, "left", integer=True)]

#: The default share of delta that covers the sketch bounds failing.
FAILURE_SHARE = 0.1


@dataclass(frozen=True)
class Sketch:
    """The random sketches of a low-rank factorization: their sizes, failure share and public seed.

    Upadhyay's factorizations (and the local protocol's ``protocol="sketch"``) compress A with random
    linear maps: Phi and Psi (``A Phi``, ``Psi A``: subspace embeddings, t in the paper) and the affine
    sketches S, T of the rank-k solve (v in the paper). Pass ``sketch=Sketch(...)`` to set any of
    these; a field left at None takes the method's default.

    Parameters
    ----------
    subspace_size : int or None, default=None
        t: the columns of ``A Phi`` and rows of ``Psi A``, in [k, the dimension it sketches]. None:
        ``ceil(k / alpha)``, capped by that dimension.
    affine_size : int or None, default=None
        v: the rows of the affine sketches S (and T) of the rank-k solve. None: ``ceil(k / alpha^2)``,
        at least t, capped by the dimension.
    failure_share : float in (0, 1) or None, default=None
        The share of delta that covers the sketch norm bounds failing: the Gaussian noise is calibrated
        to a sketched sensitivity that holds except with probability ``delta_s = failure_share *
        delta`` (per sketch), and that probability is charged as part of delta. None: 0.1.
    seed : int or None, default=None
        Public seed of the sketches. None: fresh OS entropy (never drawn from ``random_state``). A
        declared seed makes runs reproducible; the sketch must not be chosen by whoever supplies the
        data (the privacy analysis holds for a sketch drawn independently of it).
    sensitivity : {"per_pair", "drawn"} or None, default=None
        How the sketched sensitivity is bounded. ``"per_pair"`` (None): chi-square bounds over random
        sketches, failing with probability ``delta_s`` (the failure share above). ``"drawn"``: the
        exact worst case for the sketches actually drawn, sound whatever the seed, with no failure
        share; the local protocol (:func:`~dpspectral.local.private_local_lrf`) only.
    """

    subspace_size: int | None = None
    affine_size: int | None = None
    failure_share: float | None = None
    seed: int | None = None
    sensitivity: Literal["per_pair", "drawn"] | None = None


#: The keywords that became fields of :class:`Sketch` (the paper's ``t`` and ``v`` included).
SKETCH_KEYWORDS = {"subspace_sketch_size": "subspace_size", "affine_sketch_size": "affine_size",
                   "sketch_failure_share": "failure_share", "sketch_seed": "seed",
                   "t": "subspace_size", "v": "affine_size", "sketch_sensitivity": "sensitivity"}

#: ``@sketch_keywords`` on a function or ``__init__`` taking ``sketch``: the old keywords still work for
#: one release, with a FutureWarning (outermost, above ``validated``).
sketch_keywords = folded("sketch", Sketch, SKETCH_KEYWORDS)

#: The constraint of a ``sketch`` parameter.
SKETCH_OPTION: list[Constraint] = [NONE, Types((Sketch,), "a Sketch")]

#: The names of the two sizes in messages (``sketch_sizes(parameter_names=...)``).
SIZE_FIELDS = ("sketch.subspace_size", "sketch.affine_size")

_TABLE: dict[str, Constraint | list[Constraint]] = {
    "sketch.subspace_size": [NONE, Interval(1, None, "left", integer=True)],
    "sketch.affine_size": [NONE, Interval(1, None, "left", integer=True)],
    "sketch.failure_share": [NONE, SHARE],
    "sketch.seed": SKETCH_SEED,
    "sketch.sensitivity": [NONE, Options(("per_pair", "drawn"))],
}


def sketch_options(sketch: Sketch | None, owner: str, drawn: bool = False) -> Sketch:
    """``sketch`` with the defaults filled in (``failure_share`` 0.1, ``sensitivity`` "per_pair"), checked.

    A bad field is refused with a message naming it (``'sketch.failure_share'``) before anything is
    charged; ``sensitivity="drawn"`` only where the caller computes it (``drawn``). The sizes' bounds
    depend on k and the shape: :func:`.sketch_sizes` checks those.
    """
    options = Sketch() if sketch is None else sketch
    check_params(_TABLE, {f"sketch.{field.name}": getattr(options, field.name) for field in fields(options)},
                 owner)
    if options.sensitivity == "drawn" and not drawn:
        raise ValueError(f"{owner}: sketch.sensitivity='drawn' is the local protocol's (private_local_lrf); "
                         "this method bounds the sensitivity per pair (sketch.sensitivity='per_pair').")
    return replace(options, failure_share=FAILURE_SHARE if options.failure_share is None
                   else options.failure_share, sensitivity=options.sensitivity or "per_pair")


def failure_share_of(sketch: Sketch | None) -> float:
    """The sketch's failure share, the default (0.1) where it is None."""
    share = None if sketch is None else sketch.failure_share
    return float(FAILURE_SHARE if share is None else share)


def sketch_plan(sketch: Sketch | None, k: int, alpha: float, max_subspace_size: int, max_affine_size: int,
                owner: str) -> tuple[Sketch, SketchSizes]:
    """The checked options (:func:`sketch_options`) and the sizes they give (:func:`.sketch_sizes`)."""
    options = sketch_options(sketch, owner)
    sizes = sketch_sizes(k, alpha, max_subspace_size, max_affine_size,
                         subspace_sketch_size=options.subspace_size, affine_sketch_size=options.affine_size,
                         owner=owner, parameter_names=SIZE_FIELDS)
    return options, sizes
