"""Seeded noise drawn where the data live: a PyTorch or CuPy generator on the data's device.

:class:`DeviceNoise` is the noise source of the array API path (``docs/array-api.md``): with
``array_api_dispatch`` on, a covered method given a PyTorch or CuPy array draws every additive noise in
that namespace, on that device, so that nothing but the plan (a few floats) and the released norm
histogram (a short vector) crosses to the host. It has :class:`~dpspectral.privacy._noise.SeededNoise`'s
interface (``add_gaussian``, ``add_laplace``, ``add_symmetric_gaussian`` with shapes ``"goe"``/``"iid"``,
``gaussian``, ``generator``, ``name``) and is chosen by
:func:`~dpspectral.privacy._noise.noise_source` ``(random_state, like=X)``.

Seeding
-------
``random_state`` (secret, as everywhere) gives the host generator of :func:`noise_source`
(``generator``: the randomness other than additive noise, e.g. the power method's random start, drawn
exactly as on the NumPy path). The device stream is seeded with a 63-bit integer drawn from a child of
that generator's ``SeedSequence`` (``Generator.spawn``: the host generator itself is not advanced):
PyTorch: a ``torch.Generator`` on the device (``manual_seed``); CuPy: ``cupy.random.default_rng`` on
the device; other namespaces (array-api-strict, NumPy-like ones): NumPy's generator with that seed,
the draws converted to the namespace. The same ``random_state`` and the same device and library
version give the same output.

Privacy
-------
**The same law, a different stream.** Every draw has the law the plan states (``N(0, std^2)`` per
coordinate, i.i.d.; the symmetric shapes as in
:meth:`~dpspectral.privacy._noise.NoiseSource.add_symmetric_gaussian`; Laplace as a difference of two
exponentials), so the mechanism, its sensitivity and its accounting events are the NumPy path's; only
the pseudo-random stream differs (a given seed gives other numbers than on NumPy, and other numbers on
CPU and GPU). Like the seeded NumPy source these are floating-point samples (Mironov 2012): for
research and for users who trust the machine, not for an adversary who reads the exact bits.
``random_state="secure"`` draws every additive noise with the host's secure source (OS entropy, the
exact discrete samplers), as the default exact noise below is drawn: the statistic copied to the host,
released there, the release copied back.

Exact noise (the default)
-------------------------
With the default configuration (``dpspectral.config_context(noise="exact")``) the additive noise is
the host's exact discrete noise (:class:`~dpspectral.privacy._noise.ExactNoise`, seeded from the same
child seed): the statistic is copied to the host, released there on its grid, and the release copied
back. The exact samplers are integer and branch-heavy (rejection loops over shrinking sets of
entries), which suits the host; the copies are of the released statistic only (a d x d matrix, a
vector), which is small next to the data. The report's ``noise_source`` is then ``"exact"``; the
device's floating-point stream above is used with ``config_context(noise="float")``
(``"seeded-device"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._noise_base import NoiseSource, _check_shape

__all__ = ["DeviceNoise", "device_noise_source", "device_seed"]


def device_seed(generator: np.random.Generator) -> int:
    """A 63-bit seed for the device generator, from a child of ``generator``'s ``SeedSequence``.

    ``Generator.spawn`` leaves ``generator``'s own state as it was (the host draws are the NumPy
    path's); a generator without a seed sequence gives one draw of its own instead.
    """
    try:
        child = generator.spawn(1)[0]
    except (AttributeError, TypeError, ValueError):
        child = generator
    return int(child.integers(0, 2**63 - 1))


def _backend(xp: Any) -> str:
    name = getattr(xp, "__name__", "")
    if "torch" in name:
        return "torch"
    if "cupy" in name:
        return "cupy"
    return "numpy"


class DeviceNoise(NoiseSource):
    """Seeded noise drawn in the data's namespace, on its device (module docstring: seeding, privacy).

    Parameters
    ----------
    generator : numpy.random.Generator
        The secret host generator (randomness other than additive noise); the device stream is seeded
        from it (:func:`device_seed`).
    xp : module
        The array namespace (``array_api_compat.array_namespace(X)``).
    device : device object
        The data's device (``array_api_compat.device(X)``).
    dtype : dtype, optional
        The namespace's floating dtype for :meth:`gaussian` (default float64).
    """

    name = "seeded-device"

    def __init__(self, generator: np.random.Generator, xp: Any, device: Any, dtype: Any = None,
                 exact: Callable[[np.random.Generator], NoiseSource] | None = None) -> None:
        self.generator = generator
        self.xp = xp
        self.device = device
        self.dtype = xp.float64 if dtype is None else dtype
        self.backend = _backend(xp)
        seed = device_seed(generator)
        # ``exact``: the host's exact source (the default configuration), keyed from the same seed; its
        # draws are copied to the device
        self._exact: NoiseSource | None = None
        if exact is not None:
            self._exact = exact(np.random.default_rng(seed))
            self.name = self._exact.name  # "exact", or "secure" (OS entropy)
            if self.name == "secure":  # its exact draws (permutations, samples) take the OS's words too
                self._words = self._exact._words  # type: ignore[attr-defined]
        if self.backend == "torch":
            import torch

            self._stream: Any = torch.Generator(device=device)
            self._stream.manual_seed(seed)
        elif self.backend == "cupy":  # pragma: no cover - needs a GPU
            import cupy

            with cupy.cuda.Device(getattr(device, "id", device)):
                self._stream = cupy.random.default_rng(seed)
        else:
            self._stream = np.random.default_rng(seed)

    def _standard(self, shape: tuple[int, ...], dtype: Any, kind: str = "normal") -> Any:
        """Standard normal (or standard Laplace) draws of ``shape`` in the namespace, on the device."""
        if self.backend == "torch":
            import torch

            if kind == "normal":
                return torch.randn(shape, generator=self._stream, device=self.device, dtype=dtype)
            e = torch.empty((2, *shape), device=self.device, dtype=dtype).exponential_(
                generator=self._stream)
            return e[0] - e[1]
        if self.backend == "cupy":  # pragma: no cover - needs a GPU
            import cupy

            with cupy.cuda.Device(getattr(self.device, "id", self.device)):
                if kind == "normal":
                    return self._stream.standard_normal(size=shape, dtype=dtype)
                e = self._stream.standard_exponential(size=(2, *shape), dtype=dtype)
                return e[0] - e[1]
        draw = (self._stream.standard_normal(shape) if kind == "normal"
                else self._stream.laplace(0.0, 1.0, size=shape))
        return self.xp.astype(self.xp.asarray(np.asarray(draw), device=self.device), dtype)

    def _host_exact(self, method: str, statistic: Any, *args: Any, **kwargs: Any) -> Any:
        """The host's exact release of ``statistic`` (copied there and back when on the device)."""
        from .._array_api import is_device_array, to_numpy

        if not is_device_array(statistic):
            return getattr(self._exact, method)(statistic, *args, **kwargs)
        host = np.asarray(to_numpy(statistic), dtype=np.float64)
        out = getattr(self._exact, method)(host, *args, **kwargs)
        return self.xp.astype(self.xp.asarray(np.asarray(out), device=self.device), statistic.dtype)

    def _add(self, statistic: Any, scale: float, kind: str) -> Any:
        from .._array_api import is_device_array, to_numpy

        if is_device_array(statistic):
            return statistic + scale * self._standard(tuple(statistic.shape), statistic.dtype, kind)
        if np.ndim(statistic) == 0:  # a count: one draw from the device stream
            return float(statistic) + scale * float(self._standard((), self.xp.float64, kind))
        values = np.asarray(statistic)  # a small host vector (the norm histogram)
        return values + scale * to_numpy(self._standard(values.shape, self.xp.float64, kind))

    def add_gaussian(self, statistic: Any, std: float, sensitivity: float | None = None) -> Any:
        if self._exact is not None:
            return self._host_exact("add_gaussian", statistic, std, sensitivity)
        return self._add(statistic, std, "normal")

    def add_laplace(self, statistic: Any, scale: float, sensitivity: float | None = None) -> Any:
        if self._exact is not None:
            return self._host_exact("add_laplace", statistic, scale, sensitivity)
        return self._add(statistic, scale, "laplace")

    def add_symmetric_gaussian(self, matrix: Any, std: float,
                               sensitivity: float | None = None, shape: str = "iid") -> Any:
        """``matrix + E``, ``E`` symmetric, from one d x d standard normal ``Z``.

        ``"goe"``: ``E = std (Z + Z^T) / 2`` (diagonal ``N(0, std^2)``, above it ``N(0, std^2 / 2)``);
        ``"iid"``: ``std (Z + Z^T) / sqrt(2)`` off the diagonal and ``std Z_ii`` on it (every entry on and
        above the diagonal ``N(0, std^2)``). Independent on and above the diagonal in both.
        """
        if self._exact is not None:
            return self._host_exact("add_symmetric_gaussian", matrix, std, sensitivity, shape=shape)
        xp = self.xp
        d = int(matrix.shape[0])
        Z = self._standard((d, d), matrix.dtype)
        if _check_shape(shape) == "goe":
            return matrix + (0.5 * std) * (Z + Z.T)
        eye = xp.eye(d, dtype=matrix.dtype, device=self.device)
        E = (Z + Z.T) * (1.0 / math.sqrt(2.0)) * (1.0 - eye) + Z * eye
        return matrix + std * E

    def gaussian(self, std: float, size: Any, sensitivity: float | None = None) -> Any:
        shape = (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)
        if self._exact is not None:
            out = self._exact.gaussian(std, shape, sensitivity)
            return self.xp.astype(self.xp.asarray(np.asarray(out), device=self.device), self.dtype)
        return std * self._standard(shape, self.dtype)


def device_noise_source(
    random_state: Any, like: Any, exact: Callable[[np.random.Generator], NoiseSource] | None = None, *,
    secure: Callable[[], NoiseSource],
) -> DeviceNoise | None:
    """:class:`DeviceNoise` for a non-NumPy array ``like`` (None for NumPy data).

    ``exact``: the host's exact source to draw with (copied to the device); None: the device's own
    floating-point generator. ``secure``: the host's secure source, which ``random_state="secure"``
    draws every additive noise from (copied to the device; its generator serves the other randomness).
    """
    from .._array_api import get_namespace_and_device, work_dtype
    from .._validation import as_generator

    xp, device = get_namespace_and_device(like)
    if xp is None:
        return None
    if isinstance(random_state, str):
        if random_state == "secure":
            source = secure()
            return DeviceNoise(source.generator, xp, device, work_dtype(like, xp),
                               exact=lambda _seeded: source)
        raise ValueError(
            "The 'random_state' parameter must be None, an int, a numpy SeedSequence or Generator, or "
            f"'secure'. Got {random_state!r} instead."
        )
    return DeviceNoise(as_generator(random_state), xp, device, work_dtype(like, xp), exact=exact)
