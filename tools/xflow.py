"""How the private rows move between the library's modules during one call.

``python tools/xflow.py`` calls ``dpspectral.analyze_gauss`` on a small float64 array, a memmap of it
and (if dask is installed) a Dask array of it, and records, with :func:`sys.setprofile`, every Python
frame of the library entered (called, or a generator resumed) whose arguments or locals hold the data:
``X`` itself, an array that shares memory with it (a view, a slice, a block of its rows) or a block that
one of the row iterators of ``dpspectral._rows`` yielded, looking one level into containers and
objects (a tuple of blocks, ``self.X``). The module of each such frame, in call order, is the path
(repeats in a row merged). A move is a frame handing the data to a frame of another module: the frame
entered and the nearest frame up its stack that holds the data. Printed for each input:

(a) the distinct modules the data visit;
(b) the moves between modules;
(c) the returns: moves into a module the data had left before;
(d) the upward moves: from a module of a lower layer to one of a higher layer, in the layer order of
    ``docs/architecture.md``: a module's layer is one more than the highest layer of the library's
    modules it imports (:func:`layers`; the leaf ``_rows`` and the privacy core at the bottom, the
    mechanisms above the release template, the estimators and the command on top).

The same counts over consecutive entries of the path (a frame entered after a callee returned counted
as a move from the callee's module) are printed too: a coarser measure. ``-v`` lists every frame.
:func:`analyze_gauss_flow` returns a :class:`Flow` (``tests/test_xflow.py`` bounds the upward moves).
"""

from __future__ import annotations

import ast
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SRC = Path(__file__).resolve().parents[1] / "src"


def import_graph(root: Path = SRC / "dpspectral") -> dict[str, set[str]]:
    """The modules of the package at ``root`` and the modules of it each one imports.

    Every import counts, at module level or inside a function; ``from pkg import mod`` is an edge to
    the module ``pkg.mod``, ``from pkg import name`` one to ``pkg`` (its ``__init__``).
    """
    modules: dict[str, bool] = {}  # name -> whether it is a package's __init__
    paths: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_init else parts)
        modules[name], paths[name] = is_init, path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if modules[name] else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                           for alias in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def layers(graph: dict[str, set[str]] | None = None) -> dict[str, int]:
    """Each module's layer: 0 for a module that imports none of the library, else one more than the
    highest layer it imports (the import graph has no cycle: ``tests/test_layering.py``)."""
    graph = import_graph() if graph is None else graph
    depth: dict[str, int] = {}

    def of(name: str) -> int:
        if name not in depth:
            depth[name] = -1  # in progress: a cycle would read as layer 0 here
            depth[name] = 1 + max((of(m) for m in graph[name]), default=-1)
        return depth[name]

    for name in graph:
        of(name)
    return depth


@dataclass
class Flow:
    """The data's path through the modules and its moves.

    ``path``: the module of every frame entered that holds the data, in call order (repeats in a row
    merged); ``edges``: for each such frame in another module than the frame that handed it the data
    (the nearest frame up its stack that holds the data), ``(from, to)``.
    """

    path: list[str] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)
    frames: list[tuple[str, str]] = field(default_factory=list)  # (module, function) of every frame

    @property
    def modules(self) -> int:
        """(a) The distinct modules the data visit."""
        return len(set(self.path))

    @property
    def moves(self) -> int:
        """(b) The moves between modules: a frame of one module handing the data to another's."""
        return len(self.edges)

    @property
    def returns(self) -> int:
        """(c) The moves into a module the data had left before."""
        seen: set[str] = set()
        count = 0
        for a, b in self.edges:
            seen.add(a)
            count += b in seen
            seen.add(b)
        return count

    def upward_moves(self) -> list[tuple[str, str]]:
        """(d) The moves from a module of a lower layer to one of a higher layer (:func:`layers`)."""
        layer = layers()
        return [(a, b) for a, b in self.edges if layer[b] > layer[a]]

    @property
    def upward(self) -> int:
        return len(self.upward_moves())

    def summary(self) -> str:
        return (f"{self.modules} modules, {self.moves} moves, {self.returns} returns, "
                f"{self.upward} upward moves")

    def sequence_summary(self) -> str:
        """The same counts over consecutive entries of ``path`` instead of hand-offs: a frame entered
        after a callee returned counts as a move from that callee's module (a coarser measure)."""
        layer = layers()
        pairs = list(zip(self.path, self.path[1:], strict=False))
        returns = sum(1 for i in range(1, len(self.path)) if self.path[i] in self.path[:i])
        upward = sum(1 for a, b in pairs if layer[b] > layer[a])
        return f"{len(pairs)} moves, {returns} returns, {upward} upward moves"


class _Tracker:
    """Which objects are the data: ``X``, what shares its memory, and blocks the row iterators yield."""

    def __init__(self, X: Any) -> None:
        self.X = X
        self.base = X if isinstance(X, np.ndarray) else None
        self.blocks: dict[int, Any] = {}  # id -> block (kept alive, so the id is not reused)

    def add_block(self, value: Any) -> None:
        for item in _items(value):
            if isinstance(item, np.ndarray) or hasattr(item, "shape"):
                self.blocks[id(item)] = item

    def holds(self, value: Any) -> bool:
        return any(self._is_data(v) for v in _items(value))

    def _is_data(self, value: Any) -> bool:
        if value is self.X or id(value) in self.blocks:
            return True
        if self.base is not None and isinstance(value, np.ndarray) and value.size:
            base = value
            while base is not None:  # a view of X, a slice, a reshape
                if base is self.base:
                    return True
                base = base.base if isinstance(base, np.ndarray) else None
            return bool(np.shares_memory(value, self.base, max_work=10_000))
        return False


def _items(value: Any) -> list[Any]:
    """``value`` and what it holds one level down (a container's items, an object's attributes)."""
    out = [value]
    if isinstance(value, (tuple, list)):
        out += list(value[:16])
    elif isinstance(value, dict):
        out += list(value.values())[:16]
    elif not isinstance(value, (np.ndarray, type)) and hasattr(value, "__dict__"):
        try:
            out += list(vars(value).values())[:16]
        except TypeError:
            pass
    return out


def measure(call: Callable[[], Any], X: Any) -> Flow:
    """Run ``call()`` and record the modules of the library's frames that hold the data ``X``."""
    tracker = _Tracker(X)
    flow = Flow()

    holding: dict[int, str] = {}  # id of a live frame that holds the data -> its module

    def handed_by(frame: Any) -> str | None:
        up = frame.f_back
        while up is not None:
            if id(up) in holding:
                return holding[id(up)]
            up = up.f_back
        return None

    def profile(frame: Any, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("dpspectral"):
            return
        if event == "return":
            holding.pop(id(frame), None)
            if module == "dpspectral._rows" and frame.f_code.co_flags & 0x20:
                tracker.add_block(arg)  # a block yielded by a row iterator (a generator of _rows)
            return
        if event != "call" or not any(tracker.holds(v) for v in list(frame.f_locals.values())):
            return
        flow.frames.append((module, frame.f_code.co_name))
        source = handed_by(frame)
        if source is not None and source != module:
            flow.edges.append((source, module))
        holding[id(frame)] = module
        if not flow.path or flow.path[-1] != module:
            flow.path.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return flow


def analyze_gauss_flow(X: Any, **kwargs: Any) -> Flow:
    """The flow of one ``dpspectral.analyze_gauss(X, 2, ...)`` call (seeded, budget 1, 1e-5)."""
    import dpspectral

    options = dict(epsilon=1.0, delta=1e-5, row_norm=1.0, random_state=0, show_progress=False) | kwargs
    return measure(lambda: dpspectral.analyze_gauss(X, 2, **options), X)


def sample_data(n: int = 200, d: int = 6) -> np.ndarray:
    """A small float64 data set, rows within the bound 1."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)) * np.linspace(1.0, 0.2, d)
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def inputs(folder: str) -> list[tuple[str, Any]]:
    """The inputs measured: the array, a memmap of it and, if dask is installed, a Dask array of it."""
    X = sample_data()
    path = os.path.join(folder, "x.dat")
    mm = np.memmap(path, dtype=np.float64, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    out: list[tuple[str, Any]] = [("ndarray", X),
                                  ("memmap", np.memmap(path, dtype=np.float64, mode="r", shape=X.shape))]
    try:
        import dask.array as da
    except ImportError:
        return out
    return out + [("dask", da.from_array(X, chunks=(50, X.shape[1])))]


def main(argv: Sequence[str] = ()) -> int:
    verbose = "-v" in argv
    with tempfile.TemporaryDirectory() as folder:
        for name, X in inputs(folder):
            flow = analyze_gauss_flow(X)
            print(f"{name}: {flow.summary()}")
            print(f"  (consecutive entries: {flow.sequence_summary()})")
            print("  path: " + " -> ".join(m.removeprefix("dpspectral.") for m in flow.path))
            for a, b in flow.upward_moves():
                print(f"  up: {a} -> {b}")
            if verbose:
                for module, function in flow.frames:
                    print(f"    {module}.{function}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
