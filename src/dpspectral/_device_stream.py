"""Out-of-core on a device: host rows streamed through an accelerator in blocks (``device=``).

``analyze_gauss``, ``mod_sulq``, ``noisy_power`` and :class:`~dpspectral.DPPCA` take a public
``device=`` target. The data stay where they are (a NumPy array, an ``np.memmap``, or an iterable of row
blocks: a list, a generator, or a callable returning a fresh iterator); every pass (validation, norm
histogram, scatter) copies one block of rows at a time to the device, clips it and adds its moments
there. Memory on the device: one block (about 2^24 entries, ``_rows._BLOCK_ELEMENTS``) plus the
``d x d`` scatter. The noise is drawn on the device (:class:`~dpspectral.privacy._device_noise.DeviceNoise`,
through the one release pipeline) and the results are arrays of the device's namespace, on it
(``dpspectral.to_numpy`` gives NumPy back).

``device`` may be (scikit-learn's and PyTorch's spelling):

* a string or a ``torch.device`` (``"cuda"``, ``"cuda:1"``, ``"cpu"``, ``"mps"``): PyTorch on that
  device;
* an array of any namespace ``array-api-compat`` knows (a CuPy array, a torch tensor, an array-api-strict
  array): that array's namespace and device (``device=cupy.empty(0)`` for the current CuPy GPU);
* ``None`` (the default): compute where the data live (NumPy on the host; a device array with array API
  dispatch on, ``docs/array-api.md``).

An explicit ``device`` needs no ``array_api_dispatch`` switch (naming the device is the request). The
input may also be an array already on that device (then it is sliced there). Refused before anything is
read or charged: an unknown or unavailable device, float16/bfloat16 data, sparse or Dask data, an array
of another namespace or on another device.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _rows as _rows_module
from ._array_api import is_device_array, work_dtype
from ._constraints import Constraint
from ._rows import (
    _is_block_source,
    _iter_blocks,
    as_numeric_2d,
    as_numeric_array,
    check_numeric_dtype,
    is_dask_array,
)

__all__ = ["DEVICE", "DeviceStream", "device_blocks", "resolve_device", "stream_to_device"]


class _DeviceTarget(Constraint):
    """A device target: a string, a ``torch.device``, or an array (its namespace and device)."""

    description = "a device string ('cuda', 'cuda:0', 'cpu'), a torch.device, or an array of the target"

    def accepts(self, value: Any) -> bool:
        module = type(value).__module__.split(".")[0]
        return isinstance(value, str) or module == "torch" or is_device_array(value)


#: The ``device`` parameter's constraint (with ``NONE``: compute where the data live).
DEVICE = _DeviceTarget()

_TORCH_KINDS = ("cpu", "cuda", "mps", "xpu")


def _torch_target(device: Any, owner: str) -> tuple[Any, Any]:
    """PyTorch's namespace and the canonical device of ``device`` (a string or a ``torch.device``)."""
    try:
        import array_api_compat
        import torch
    except ImportError as exc:  # pragma: no cover - the extras install them
        raise ImportError(f"{owner}: device={device!r} needs PyTorch and array-api-compat "
                          "(pip install 'dpspectral[torch]'). Nothing was charged.") from exc
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"{owner}: device={device!r} is not a device PyTorch knows (e.g. 'cuda', "
                         "'cuda:0', 'cpu'). Nothing was charged.") from exc
    if dev.type not in _TORCH_KINDS:
        raise ValueError(f"{owner}: device={device!r}: data can be streamed to a {', '.join(_TORCH_KINDS)} "
                         "device only. Nothing was charged.")
    try:
        probe = torch.empty((0,), device=dev)
    except (RuntimeError, AssertionError) as exc:  # e.g. CUDA not available / no such index
        raise ValueError(f"{owner}: device={device!r} is not available on this machine ({exc}). "
                         "Nothing was charged.") from exc
    return array_api_compat.array_namespace(probe), array_api_compat.device(probe)


def resolve_device(device: Any, owner: str = "dpspectral") -> tuple[Any, Any]:
    """``(xp, device)`` of a ``device=`` target (module docstring); ``(None, None)`` for None."""
    if device is None:
        return None, None
    if isinstance(device, str) or type(device).__module__.split(".")[0] == "torch" and not hasattr(
            device, "shape"):
        return _torch_target(device, owner)
    if is_device_array(device):
        import array_api_compat

        return array_api_compat.array_namespace(device), array_api_compat.device(device)
    raise TypeError(f"The 'device' parameter of {owner} must be None, {DEVICE.description}. "
                    f"Got {device!r} instead. Nothing was charged.")


def half_precision_error(owner: str) -> TypeError:
    """float16 is refused (the reason of ``_array_api.get_namespace_and_device``)."""
    return TypeError(
        f"{owner}: float16 data are refused: the scatter of n rows of norm up to row_norm is a sum of n "
        "terms, which float16 (11-bit mantissa, largest value 65504) rounds or overflows, so the noise "
        "calibrated to the statistic's sensitivity would no longer bound what is released. Convert to "
        "float32 or float64. Nothing was charged.")


def _host_dtype(dtype: Any, owner: str) -> np.dtype:
    """The dtype the blocks are sent in: float32/float64 as they are, integers in float64."""
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        raise half_precision_error(owner)
    check_numeric_dtype(dtype, owner)  # text, complex...: refused, quoting nothing from the data
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


class DeviceStream:
    """Host rows read block by block onto a device (module docstring); what ``device=`` makes of ``X``.

    ``shape`` is ``(n, d)`` for an array (None for a stream of blocks: unknown until read), ``dtype`` the
    namespace's dtype of the blocks on the device, ``device_target`` ``(xp, device)`` (what
    :func:`dpspectral._array_api.get_namespace_and_device` returns for it), ``stream_reiterable``
    whether it can be read twice (not a bare iterator).
    """

    def __init__(self, source: Any, xp: Any, device: Any, host_dtype: np.dtype | None,
                 shape: tuple[int, int] | None, reiterable: bool, on_device: bool = False) -> None:
        self.source = source
        self.device_target = (xp, device)
        self.host_dtype = host_dtype
        self.shape = shape
        self.stream_reiterable = reiterable
        self.on_device = on_device
        if on_device:
            self.dtype = work_dtype(source, xp)
        else:
            self.dtype = xp.float32 if host_dtype == np.float32 else xp.float64

    def _rows(self, d: int) -> int:
        return max(1, _rows_module._BLOCK_ELEMENTS // max(d, 1))

    def blocks(self, owner: str, show_progress: bool | None = None) -> Iterator[tuple[int, Any]]:
        """``(first row, block on the device)``, blocks of at most ``_rows(d)`` rows, in order."""
        xp, device = self.device_target
        if self.on_device:
            n, width = (int(s) for s in self.source.shape)
            rows = self._rows(width)
            for a in range(0, n, rows):
                yield a, self.source[a:min(n, a + rows), ...]
            return
        d: int | None = None
        for first_row, raw in _iter_blocks(self.source, owner, show_progress):
            if hasattr(raw, "tocsr") or type(raw).__module__.split(".")[0] != "numpy" and hasattr(
                    raw, "__array_namespace__"):
                raise TypeError(f"{owner}: a block of the stream is not a NumPy array (got "
                                f"{type(raw).__name__}); device= streams dense host rows. Nothing "
                                "was charged.")
            host = as_numeric_2d(raw, owner)
            if d is not None and host.shape[1] != d:
                raise ValueError(f"{owner}: a block has {host.shape[1]} features, earlier blocks had {d}.")
            d = host.shape[1]
            rows = self._rows(d)
            for a in range(0, host.shape[0], rows):
                piece = np.ascontiguousarray(host[a:a + rows], dtype=self.host_dtype)
                with warnings.catch_warnings():  # a read-only memmap's block: never written (clipping copies)
                    warnings.simplefilter("ignore", UserWarning)
                    block = xp.asarray(piece, device=device)
                yield first_row + a, block


def _peek_dtype(source: Any) -> tuple[Any, Any]:
    """The first block's dtype of a block source, and the source to read (a bare iterator re-chained)."""
    from collections.abc import Iterator as _It

    if isinstance(source, (list, tuple)):
        return (getattr(source[0], "dtype", np.float64) if source else np.float64), source
    if isinstance(source, _It):
        first = next(source, None)
        if first is None:
            return np.float64, iter(())
        return getattr(first, "dtype", np.float64), itertools.chain([first], source)
    first = next(iter(source()), None)  # a callable: a fresh iterator each call
    return (np.float64 if first is None else getattr(first, "dtype", np.float64)), source


def stream_to_device(X: Any, device: Any, owner: str) -> Any:
    """``X`` as a :class:`DeviceStream` onto ``device`` (``X`` itself when ``device`` is None).

    Refused before anything is read or charged (see the module docstring).
    """
    if device is None:
        return X
    xp, dev = resolve_device(device, owner)
    if isinstance(X, DeviceStream):
        return X
    if is_device_array(X):
        import array_api_compat

        if array_api_compat.array_namespace(X) is not xp or array_api_compat.device(X) != dev:
            raise ValueError(
                f"{owner}: X is a {type(X).__module__.split('.')[0]} array on "
                f"{array_api_compat.device(X)}, device={device!r} names {getattr(xp, '__name__', xp)} on "
                f"{dev}. Pass host data (NumPy, a memmap or row blocks) to stream, or move X there "
                "first. Nothing was charged.")
        dtype = X.dtype
        if dtype == getattr(xp, "float16", None) or dtype == getattr(xp, "bfloat16", None):
            raise half_precision_error(owner)
        if X.ndim != 2:
            raise ValueError(f"{owner} expects 2-D data; got shape {tuple(X.shape)}. Nothing was charged.")
        return DeviceStream(X, xp, dev, None, (int(X.shape[0]), int(X.shape[1])), True, on_device=True)
    if is_dask_array(X) or hasattr(X, "tocsr"):
        raise TypeError(f"{owner}: device= streams dense host rows (a NumPy array, a memmap or row "
                        "blocks); Dask and sparse data keep their own paths (leave device=None). "
                        "Nothing was charged.")
    if _is_block_source(X):
        first_dtype, source = _peek_dtype(X)
        return DeviceStream(source, xp, dev, _host_dtype(first_dtype, owner), None,
                            reiterable=not isinstance(source, Iterator))
    checked = as_numeric_array(X, owner, convert_object=False)  # numeric, 2-D; refusals quote no cell
    if not isinstance(X, np.ndarray):
        X = checked  # (an ndarray, a memmap included, is kept as it is: checked, not read)
    return DeviceStream(X, xp, dev, _host_dtype(X.dtype, owner), (int(X.shape[0]), int(X.shape[1])), True)


def is_device_stream(X: Any) -> bool:
    """Whether ``X`` is a :class:`DeviceStream`."""
    return isinstance(X, DeviceStream)


def device_blocks(X: Any, xp: Any, owner: str, show_progress: bool | None = None,
                  rows: int | None = None) -> Iterator[tuple[int, Any]]:
    """``(first row, block)`` on the device: a :class:`DeviceStream`'s blocks, or a device array's slices."""
    if isinstance(X, DeviceStream):
        yield from X.blocks(owner, show_progress)
        return
    n, d = (int(s) for s in X.shape)
    if rows is None:
        rows = max(1, _rows_module._BLOCK_ELEMENTS // max(d, 1))
    for a in range(0, n, rows):
        yield a, X[a:min(n, a + rows), ...]
