"""Array API support, scikit-learn's way: compute where the data live (PyTorch, CuPy, array-api-strict).

The switch is scikit-learn's: inside ``sklearn.config_context(array_api_dispatch=True)`` (which needs
``SCIPY_ARRAY_API=1`` in the environment, a scikit-learn requirement) or the project's own
``dpspectral.config_context(array_api_dispatch=True)`` (no SciPy requirement: nothing here calls SciPy on
device arrays), the covered methods (:data:`COVERED_METHODS`) accept any array of a namespace that
``array-api-compat`` knows and compute in it, on its device: clipping, moments, the noise
(:mod:`dpspectral.privacy._device_noise`), the eigendecomposition and the result's arrays. The accountant
and the calibration stay on the host (a plan is a few floats). :func:`to_numpy` gives NumPy back.

Bad input (refused before anything is read or charged): a non-NumPy array with the switch off (enable
it, or convert with :func:`to_numpy`); float16 (the scatter of rows of norm up to C accumulates ``n``
terms: float16's 11-bit mantissa and its range (max 65504) lose the statistic, and the noise calibrated
to its sensitivity would no longer bound what is released); a method that is not covered.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .privacy._clipping import clip_threshold, norm_scale

__all__ = ["COVERED_METHODS", "config_context", "dispatch_enabled", "from_numpy", "get_config",
           "get_namespace_and_device", "is_device_array", "like", "refuse_device", "same_space",
           "set_config", "to_numpy", "vector_norm"]

#: The methods that compute in the input's namespace (the covariance path, the noisy power method, the
#: streaming minibatch Oja and the gradient-perturbation methods DP-SPCA and DP-VRPCA).
COVERED_METHODS = ("analyze_gauss", "mod_sulq", "noisy_power", "minibatch_oja", "dp_spca", "dp_vrpca")

#: Why the row-by-row streaming methods stay on the host (:func:`refuse_device`).
ROW_BY_ROW = ("its inner loop is one row (or one small minibatch) per step, with a per-step noisy "
              "histogram and a compiled (numba) kernel on the host: on a GPU each step would be a few "
              "tiny kernel launches, slower than the CPU loop (minibatch_oja is the batched streaming "
              "method that runs on a device).")

_local = threading.local()


#: The noise of every additive release drawn on the host: ``"exact"`` (default: exact discrete
#: samplers on the release's grid, :mod:`dpspectral.privacy._noise`) or ``"float"`` (NumPy's
#: floating-point samples, as in the papers' experiments; for comparison only).
NOISE_KINDS = ("exact", "float")


def get_config() -> dict[str, Any]:
    """dpspectral's own configuration (this thread's).

    ``{"array_api_dispatch": bool, "noise": "exact" | "float"}``: see :func:`config_context`.
    """
    return {"array_api_dispatch": bool(getattr(_local, "array_api_dispatch", False)),
            "noise": str(getattr(_local, "noise", "exact"))}


def set_config(array_api_dispatch: bool | None = None, noise: str | None = None) -> None:
    """Set this thread's configuration (see :func:`config_context`); ``None`` leaves a setting as it is."""
    if noise is not None and noise not in NOISE_KINDS:
        raise ValueError(f"The 'noise' setting must be one of {NOISE_KINDS}. Got {noise!r} instead.")
    if array_api_dispatch is not None:
        _local.array_api_dispatch = bool(array_api_dispatch)
    if noise is not None:
        _local.noise = noise


@contextlib.contextmanager
def config_context(*, array_api_dispatch: bool | None = None, noise: str | None = None) -> Iterator[None]:
    """Within the block, the given settings hold (this thread); they are restored after it.

    Parameters
    ----------
    array_api_dispatch : bool, optional
        The covered methods compute in the input's array namespace, on its device. The same effect as
        ``sklearn.config_context(array_api_dispatch=True)`` (either switch is enough), without
        scikit-learn's requirement of ``SCIPY_ARRAY_API=1``.
    noise : {"exact", "float"}, optional
        How a seeded ``random_state`` draws additive noise: ``"exact"`` (default) draws the exact
        discrete Gaussian and Laplace on each release's grid, from the seeded generator's bits, so no
        output carries the low-order bits of a floating-point sample; ``"float"`` draws NumPy's
        floating-point normal and Laplace samples, as the papers' experiments did (for comparison
        only: such bits can reveal the data, Mironov 2012). The report's ``noise_source`` says which
        (``"exact"``, ``"float"``; ``random_state="secure"`` is always exact, ``"secure"``).
    """
    old = get_config()
    set_config(array_api_dispatch, noise)
    try:
        yield
    finally:
        set_config(old["array_api_dispatch"], old["noise"])


def dispatch_enabled() -> bool:
    """Whether dpspectral's or scikit-learn's ``array_api_dispatch`` is on."""
    if get_config()["array_api_dispatch"]:
        return True
    import sklearn

    return bool(sklearn.get_config().get("array_api_dispatch", False))


_DEVICE_MODULES = ("torch", "cupy", "array_api_strict", "jax", "dpnp", "mlx")


def is_device_array(X: Any) -> bool:
    """An array of a non-NumPy array namespace (a torch tensor, a CuPy array...); not Dask, not sparse."""
    if isinstance(X, (np.ndarray, np.generic)) or isinstance(X, (list, tuple)):
        return False
    module = type(X).__module__.split(".")[0]
    if module in ("dask", "scipy", "numpy"):
        return False
    return module in _DEVICE_MODULES or hasattr(X, "__array_namespace__")


def get_namespace_and_device(X: Any, owner: str = "dpspectral") -> tuple[Any, Any]:
    """``(xp, device)`` of a device array with dispatch on; ``(None, None)`` for NumPy-path input.

    Refused (a ``TypeError``, nothing read or charged): a device array with dispatch off, float16 or
    another non-float/integer dtype, or ``array-api-compat`` missing.
    """
    target = getattr(X, "device_target", None)
    if target is not None:  # host rows streamed to a named device (device=; dpspectral._device_stream)
        return target
    if not is_device_array(X):
        return None, None
    kind = f"{type(X).__module__.split('.')[0]} array"
    if not dispatch_enabled():
        raise TypeError(
            f"{owner}: got a {kind} with array_api_dispatch off. Either compute where the data live: "
            "`with dpspectral.config_context(array_api_dispatch=True):` (or "
            "sklearn.config_context(array_api_dispatch=True), which needs SCIPY_ARRAY_API=1), for "
            f"{', '.join(COVERED_METHODS)}; or convert to NumPy first (dpspectral.to_numpy(X)). "
            "Nothing was charged."
        )
    try:
        import array_api_compat
    except ImportError as exc:  # pragma: no cover - the extras install it
        raise ImportError(
            f"{owner}: array API dispatch needs array-api-compat (pip install 'dpspectral[torch]' or "
            "'dpspectral[cupy]'). Nothing was charged."
        ) from exc
    xp = array_api_compat.array_namespace(X)
    if getattr(X, "ndim", 2) != 2:
        raise ValueError(
            f"{owner} expects 2-D data of shape (n_samples, n_features); got a {kind} of shape "
            f"{tuple(X.shape)}. Nothing was charged."
        )
    dtype = X.dtype
    if dtype == getattr(xp, "float16", None) or dtype == getattr(xp, "bfloat16", None):
        raise TypeError(
            f"{owner}: float16 data are refused: the scatter of n rows of norm up to row_norm is a sum "
            "of n terms, which float16 (11-bit mantissa, largest value 65504) rounds or overflows, so "
            "the noise calibrated to the statistic's sensitivity would no longer bound what is "
            "released. Convert to float32 or float64 (X.to(torch.float32), xp.astype(X, xp.float32)). "
            "Nothing was charged."
        )
    if not (xp.isdtype(dtype, "real floating") or xp.isdtype(dtype, "integral")):
        raise TypeError(f"{owner} needs real numeric data; got a {kind} of dtype {dtype}. "
                        "Nothing was charged.")
    return xp, array_api_compat.device(X)


def refuse_device(X: Any, owner: str, why: str = ROW_BY_ROW) -> None:
    """Refuse a device array (switch on or off) in a method that runs on the host only.

    A ``TypeError`` naming ``why``, the covered methods and the conversion, before anything is read
    or charged; NumPy-path input (arrays, memmaps, sparse, Dask, lists, streams) passes.
    """
    if not is_device_array(X):
        return
    raise TypeError(
        f"{owner} does not run on device arrays (got a {type(X).__module__.split('.')[0]} array): {why} "
        f"Array API dispatch covers {', '.join(COVERED_METHODS)}. Convert the data to run {owner} on "
        "the host (dpspectral.to_numpy(X)). Nothing was charged."
    )


def work_dtype(X: Any, xp: Any) -> Any:
    """The floating dtype the moments are computed in: X's (float32/float64), else float64."""
    if xp.isdtype(X.dtype, "real floating"):
        return X.dtype
    return xp.float64


def to_numpy(array: Any) -> Any:
    """A NumPy array (on the host) of ``array``, whatever its namespace or device; NumPy input as it is.

    The documented way to get NumPy back from a result or a fitted estimator's attributes
    (``to_numpy(result.components)``, ``to_numpy(pca.components_)``); ``None`` passes through.
    """
    if array is None or isinstance(array, np.ndarray) or not is_device_array(array):
        return array
    module = type(array).__module__.split(".")[0]
    if module == "torch":
        return array.detach().cpu().numpy()
    if module == "cupy":
        return array.get()
    if module == "array_api_strict":
        import array_api_strict

        return np.asarray(array_api_strict.asarray(array, device=array_api_strict.Device("CPU_DEVICE")))
    return np.asarray(array)


def from_numpy(a: Any, xp: Any, device: Any, dtype: Any = None) -> Any:
    """``a`` (NumPy or a device array) as an array of ``xp`` on ``device`` (``dtype`` if given)."""
    if not isinstance(a, np.ndarray):
        return a if dtype is None else xp.astype(a, dtype)
    out = xp.asarray(np.ascontiguousarray(a), device=device)
    return out if dtype is None else xp.astype(out, dtype)


def like(a: Any, ref: Any) -> Any:
    """``a`` (NumPy, or already of ``ref``'s namespace and device) in ``ref``'s namespace, device and
    dtype; ``a`` itself when ``ref`` is NumPy."""
    if isinstance(ref, np.ndarray) or not is_device_array(ref):
        return a
    import array_api_compat

    xp = array_api_compat.array_namespace(ref)
    return from_numpy(a if is_device_array(a) else np.asarray(a), xp, array_api_compat.device(ref), ref.dtype)


def vector_norm(v: Any) -> float:
    """The Euclidean norm of a 1-D array as a float (NumPy: ``np.linalg.norm``, unchanged)."""
    if isinstance(v, np.ndarray) or not is_device_array(v):
        return float(np.linalg.norm(v))
    import array_api_compat

    return float(array_api_compat.array_namespace(v).linalg.vector_norm(v))


def same_space(fitted: Any, X: Any, owner: str, method: str) -> None:
    """Refuse ``X`` in ``method`` when its namespace or device is not the fitted attribute's."""
    fitted_device = is_device_array(fitted)
    if not fitted_device and not is_device_array(X):
        return
    xp_x, dev_x = get_namespace_and_device(X, owner)
    if not fitted_device:
        raise ValueError(
            f"{owner}.{method}: fitted on NumPy data, got a {type(X).__module__.split('.')[0]} array. "
            "Pass NumPy data (dpspectral.to_numpy(X)), or fit on data of this namespace and device."
        )
    import array_api_compat

    xp_f, dev_f = array_api_compat.array_namespace(fitted), array_api_compat.device(fitted)
    if xp_x is None or xp_x is not xp_f or dev_x != dev_f:
        where_x = "NumPy" if xp_x is None else f"{xp_x.__name__} on {dev_x}"
        raise ValueError(
            f"{owner}.{method}: the data must use the namespace and device of the data passed to fit "
            f"({xp_f.__name__} on {dev_f}); got {where_x}. Move the data (e.g. X.to(device)), or refit."
        )


def isfinite_all(B: Any, xp: Any) -> bool:
    """Whether every entry of a device array is finite (one value back to the host)."""
    return bool(xp.all(xp.isfinite(B)))



def row_norms_xp(block: Any, row_norm: float, xp: Any) -> tuple[Any, Any, int, float, Any]:
    """``(norms, rows to clip, number of rows to refuse, clip target, plain norms)`` of a device block
    (the rows not clipped). ``norms`` and ``target`` are of the rows scaled by the public power of two
    :func:`~dpspectral.privacy._clipping.norm_scale` of the bound in the block's dtype (1 for most
    bounds; for a bound far from 1 the squares of the rows near it would be subnormal or overflow, and a
    norm computed from them would no longer be within a relative rounding error): their ratio is the
    factor of the unscaled row. ``plain norms`` are the rows' own norms (finite for finite rows).

    The rule of the device paths (:func:`clip_rows_xp`; the validation passes use it alone). float64
    blocks: the NumPy path's rule (above ``row_norm (1 + 1e-10)``: clipped to ``row_norm``, or refused).
    Narrower dtypes (float32), computed in their own dtype (a float64 copy would cost the device's
    bandwidth): a computed norm is within a relative ``gamma_d + u`` of the true one (``u`` the unit
    roundoff, ``gamma_d = d u / (1 - d u)``, the classic bound for a sum of d squares), so every row whose
    computed norm exceeds ``row_norm (1 - s)``, ``s = 2 gamma_d + 2 eps``, is scaled to
    ``row_norm (1 - s)(1 - 4 eps)``: the true norm of every stored, rounded row is then within
    ``row_norm``. Only rows clearly above the bound (computed norm above ``row_norm (1 + 1e-10)(1 + s)``)
    count as refused (``on_norm_violation="raise"``): rows at the bound up to rounding are clipped, never
    refused. A NaN norm is neither: the caller refuses a block whose norms are not all finite (they are
    exactly when its entries are).
    """
    scale = norm_scale(row_norm, np.float64 if block.dtype == xp.float64 else np.float32)
    norms = xp.linalg.vector_norm(block if scale == 1.0 else block * scale, axis=1)
    plain = norms if scale == 1.0 else norms / scale
    if not isfinite_all(norms, xp) and isfinite_all(block, xp):  # finite entries whose squares overflow
        top = xp.max(xp.abs(block), axis=1)
        top = xp.where(top > 0, top, xp.ones_like(top))
        unit = xp.linalg.vector_norm(block / top[:, None], axis=1)
        plain = top * unit
        norms = plain if scale == 1.0 else (top * scale) * unit  # inf beyond the dtype: factor 0
    row_norm = row_norm * scale  # the bound of the scaled rows, in [1, 2) when scale != 1
    if block.dtype == xp.float64:
        over = refused = norms > clip_threshold(row_norm)
        target = row_norm
    else:
        eps = float(xp.finfo(block.dtype).eps)
        d_u = int(block.shape[1]) * eps / 2.0
        slack = 2.0 * d_u / (1.0 - d_u) + 2.0 * eps
        over = norms > row_norm * (1.0 - slack)
        refused = norms > clip_threshold(row_norm) * (1.0 + slack)
        target = row_norm * (1.0 - slack) * (1.0 - 4.0 * eps)
    return norms, over, int(xp.sum(xp.astype(refused, xp.int64))), target, plain


def clip_rows_xp(block: Any, row_norm: float, xp: Any) -> tuple[Any, Any, int]:
    """``(clipped block, norms, number of rows refused)`` on ``block``'s device (the rule of
    :func:`row_norms_xp`). Every row is multiplied by its factor (1 within the bound): the same work
    whatever the data."""
    norms, over, n_refused, target, plain = row_norms_xp(block, row_norm, xp)
    ones = xp.ones_like(norms)
    factors = xp.where(over, target / xp.where(over, norms, ones), ones)
    return block * factors[:, None], plain, n_refused
