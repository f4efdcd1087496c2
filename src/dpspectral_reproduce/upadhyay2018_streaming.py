"""The streaming panel of ``reproduce upadhyay2018``: Figure 5's space-optimal turnstile state.

For every distinct size (m, n, k, alpha) of the central tables (3-6) that the run covers, this panel

* builds the Priv1 turnstile state :class:`~dpspectral.lowrank._turnstile_space_optimal.
  TurnstileSpaceOptimalLRF` (Figure 5, Theorem 47) and the Priv2 state :class:`~dpspectral.lowrank.
  streaming.TurnstileLRF` (Figure 6) of that size and reports the bytes each keeps: the Priv1 state
  ``Y_c`` (m x t), ``Y_r`` (t x (m + n)), ``Z`` (v_S x v_T) and its two seeds, by
  :meth:`~dpspectral.lowrank._turnstile_space_optimal.TurnstileSpaceOptimalLRF.state_bytes`, checked
  against the closed form ``8 ((2m + n) t + v_S v_T) + 16`` (m <= n oriented, ``v_S = min(v, m)``,
  ``v_T = min(v, m + n)``); the Priv2 state ``Y_c`` (m x t) and ``Z`` (v x n, v <= m), ``8 (m t + v n)``;
  the working set of the Priv1 object (plus the secret rows ``Omega[:n]`` and the public Psi, S, T it
  keeps for fast updates, all regenerable from their seeds); and the paper's bound ``(m + n) k / alpha``
  words (Thm 47 part 3, constant 1, float64);
* streams the input of the table's row (its first repeat's matrix) into the Priv1 state as turnstile
  updates ``(i, j, A_ij)``, in a random order and in a few batches, releases once, and compares the
  factorization with the one-shot :func:`~dpspectral.lowrank._factorization.private_space_optimal_lrf`
  for the same ``random_state`` and sketch seed: the same state, hence the same result up to the
  floating-point summation order (``max |M_stream - M_one-shot| / max |A|``, rounding level).

Privacy: each state is a separate release at the table's epsilon and delta = 1/m (no shared ledger),
relation Priv1; the one-shot twin uses the Priv1 state's secret seed on purpose (the comparison). The Priv2
state is built for its size only: charged at construction on its own ledger, never updated or released.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpspectral.lowrank._factorization import private_space_optimal_lrf
from dpspectral.lowrank._sketch_options import Sketch
from dpspectral.lowrank._streaming import TurnstileLRF
from dpspectral.lowrank._turnstile_space_optimal import TurnstileSpaceOptimalLRF, paper_space_bound

from . import report

__all__ = ["COLUMNS", "STREAM_BATCHES", "STREAM_TABLES", "priv1_state_formula", "priv2_state_formula",
           "streaming_markdown", "streaming_panel", "streaming_sizes", "streaming_summary"]

#: the central tables whose sizes the panel covers (Private-Space-Optimal-LRF's tables)
STREAM_TABLES: tuple[int, ...] = (3, 4, 5, 6)
#: the stream of a matrix: its entries in a random order, in this many ``update_many`` batches
STREAM_BATCHES = 4

COLUMNS = ("tables", "table", "row", "m", "n", "k", "alpha", "t", "v", "t_priv2", "v_priv2",
           "priv1_state_bytes", "priv1_formula_bytes", "priv1_working_bytes", "priv2_state_bytes",
           "paper_bound_bytes", "priv1_over_bound", "priv2_over_bound", "priv1_over_priv2", "updates",
           "error_stream", "error_one_shot", "max_diff_rel", "s_diff_rel", "sigma_min", "seconds")


def priv1_state_formula(shape: tuple[int, int], t: int, v: int) -> int:
    """Bytes of Figure 5's state: ``8 ((2m + n) t + min(v, m) min(v, m + n)) + 16`` (m <= n oriented).

    Y_c (m x t), Y_r (t x (m + n)), Z (v_S x v_T; a sketch as large as its dimension is the identity)
    in float64, and the two 8-byte seeds (Omega's, secret, and the public sketch seed).
    """
    m, n = sorted(shape)
    return 8 * ((2 * m + n) * t + min(v, m) * min(v, m + n)) + 16


def priv2_state_formula(shape: tuple[int, int], t: int, v: int) -> int:
    """Bytes of the Priv2 turnstile state (Figure 6): ``Y_c`` (m x t) and ``Z`` (v x n), ``8 (m t + v n)``.

    m <= n oriented; the library caps t and v at m (the short side). The sketch seed is not counted.
    """
    m, n = sorted(shape)
    return 8 * (m * t + v * n)


def streaming_sizes(rows_of: Mapping[int, Sequence[int]]) -> list[dict[str, Any]]:
    """The distinct (m, n, k, alpha) of the chosen rows of Tables 3-6, first occurrence first.

    Parameters
    ----------
    rows_of : mapping of table -> row indices
        The rows the run covers (other tables are ignored).

    Returns
    -------
    list of dict
        ``table``, ``row`` (the first occurrence, whose input is streamed), ``tables`` (every table
        with that size, e.g. ``"3, 4"``), ``m``, ``n``, ``k``, ``alpha`` (the code's alpha).
    """
    from .upadhyay2018_tables import get_table

    seen: dict[tuple[int, int, int, float], dict[str, Any]] = {}
    for t in STREAM_TABLES:
        for i in rows_of.get(t, ()):
            r = get_table(t).rows[i]
            key = (r.m, r.n, r.k, float(r.alpha_code))
            if key not in seen:
                seen[key] = {"table": t, "row": i, "tables": [t], "m": r.m, "n": r.n, "k": r.k,
                             "alpha": float(r.alpha_code)}
            elif t not in seen[key]["tables"]:
                seen[key]["tables"].append(t)
    out = list(seen.values())
    for s in out:
        s["tables"] = ", ".join(map(str, s["tables"]))
    return out


def _bytes_row(size: Mapping[str, Any], epsilon: float, seed: int) -> tuple[dict[str, Any], Any]:
    """The two states of one size and their bytes (the Priv1 state is returned, empty, for streaming)."""
    m, n, k, alpha = size["m"], size["n"], size["k"], size["alpha"]
    kw: dict[str, Any] = dict(epsilon=epsilon, delta=1.0 / m, alpha=alpha, calibration="tight")
    public = _public(seed, size)
    p1 = TurnstileSpaceOptimalLRF((m, n), k, random_state=_secret(seed, size), sketch=Sketch(seed=public),
                                  **kw)
    p2 = TurnstileLRF((m, n), k, random_state=_secret(seed, size, 2), sketch=Sketch(seed=public), **kw)
    b = p1.state_bytes()
    bound = paper_space_bound((m, n), k, alpha)
    p2_bytes = priv2_state_formula((m, n), p2.sizes.t, p2.sizes.v)
    row = {**size, "t": p1.sizes.t, "v": p1.sizes.v, "t_priv2": p2.sizes.t, "v_priv2": p2.sizes.v,
           "priv1_state_bytes": b["state"], "priv1_formula_bytes": priv1_state_formula((m, n), p1.sizes.t,
                                                                                       p1.sizes.v),
           "priv1_working_bytes": b["state"] + b["secret_omega"] + b["public_sketches"],
           "priv2_state_bytes": p2_bytes, "paper_bound_bytes": bound,
           "priv1_over_bound": b["state"] / bound, "priv2_over_bound": p2_bytes / bound,
           "priv1_over_priv2": b["state"] / p2_bytes, "sigma_min": p1.sigma_min}
    return row, p1


def _secret(seed: int, size: Mapping[str, Any], which: int = 1) -> np.random.SeedSequence:
    """The secret source of a state (``which`` 1: the Priv1 state and its one-shot twin; 2: Priv2)."""
    return np.random.SeedSequence([int(seed), 24, int(size["table"]), int(size["row"]), which])


def _public(seed: int, size: Mapping[str, Any]) -> int:
    return 1_000_003 * (int(seed) + 1) + 1000 * int(size["table"]) + int(size["row"])


def _stream(state: TurnstileSpaceOptimalLRF, A: np.ndarray, rng: np.random.Generator) -> int:
    """Every non-zero entry of A as an update ``(i, j, A_ij)``, shuffled, in :data:`STREAM_BATCHES`."""
    ii, jj = np.nonzero(A)
    order = rng.permutation(ii.size)
    for part in np.array_split(order, STREAM_BATCHES):
        state.update_many(ii[part], jj[part], A[ii[part], jj[part]])
    return int(ii.size)


def _compare(row: dict[str, Any], state: TurnstileSpaceOptimalLRF, A: np.ndarray, epsilon: float,
             seed: int) -> None:
    """Stream A into ``state``, release, and compare with the one-shot run of the same seeds (in place)."""
    m, n, k = row["m"], row["n"], row["k"]
    row["updates"] = _stream(state, A, np.random.default_rng([int(seed), 24, m, n]))
    streamed = state.release("raw")
    one = private_space_optimal_lrf(A, k, epsilon=epsilon, delta=1.0 / m, alpha=row["alpha"],
                                    calibration="tight", singular_values="raw",
                                    random_state=_secret(seed, row), sketch=Sketch(seed=_public(seed, row)))
    Ms, M1 = streamed.reconstruct(), one.reconstruct()
    row["error_stream"] = float(np.linalg.norm(A - Ms))
    row["error_one_shot"] = float(np.linalg.norm(A - M1))
    row["max_diff_rel"] = float(np.abs(Ms - M1).max() / np.abs(A).max())
    row["s_diff_rel"] = float(np.abs(streamed.S - one.S).max() / one.S.max())


def streaming_panel(rows_of: Mapping[int, Sequence[int]], inputs: Any, *, epsilon: float = 1.0,
                    seed: int = 0) -> list[dict[str, Any]]:
    """One row per distinct size of the chosen rows of Tables 3-6: bytes of each state, streamed vs
    one-shot factorization.

    Parameters
    ----------
    rows_of : mapping of table -> row indices
        The rows the run covers (only Tables 3-6 are used).
    inputs : callable (table, row) -> ndarray
        The input of a table row (the reproduction passes its first repeat's matrix).
    epsilon : float, default=1.0
        Epsilon of both states (delta = 1/m).
    seed : int, default=0

    Returns
    -------
    list of dict
        Columns :data:`COLUMNS` (bytes are float64 bytes; ``max_diff_rel`` is
        ``max |M_stream - M_one-shot| / max |A|``).
    """
    rows = []
    for size in streaming_sizes(rows_of):
        t0 = time.perf_counter()
        row, state = _bytes_row(size, epsilon, seed)
        _compare(row, state, inputs(size["table"], size["row"]), epsilon, seed)
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
    return rows


def _b(key: str) -> Any:
    return lambda r: f"{int(r[key]):,}"


def streaming_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The panel as a Markdown table (bytes with thousands separators)."""
    cols = {
        "tables": ("tables", lambda r: str(r["tables"])),
        "shape": ("m × n", lambda r: f"{r['m']} × {r['n']}"),
        "k": ("k", lambda r: str(r["k"])),
        "alpha": ("α", lambda r: f"{r['alpha']:g}"),
        "tv": ("t, v", lambda r: f"{r['t']}, {r['v']}"),
        "p1": ("Priv1 state (Y_c, Y_r, Z, seeds)", _b("priv1_state_bytes")),
        "w1": ("+ Ω[:n], Ψ, S, T in memory", _b("priv1_working_bytes")),
        "p2": ("Priv2 state (Y_c, Z)", _b("priv2_state_bytes")),
        "bound": ("bound 8(m + n)k/α", _b("paper_bound_bytes")),
        "r1": ("Priv1 / bound", lambda r: f"{r['priv1_over_bound']:.2f}"),
        "r12": ("Priv1 / Priv2", lambda r: f"{r['priv1_over_priv2']:.2f}"),
        "es": ("‖A − M‖_F streamed", lambda r: f"{r['error_stream']:,.1f}"),
        "e1": ("one-shot", lambda r: f"{r['error_one_shot']:,.1f}"),
        "d": ("max |M_s − M_1| / max |A|", lambda r: f"{r['max_diff_rel']:.1e}"),
    }
    return report.markdown_table(rows, list(cols), headers=[h for h, _ in cols.values()],
                                 formatters={k: f for k, (_, f) in cols.items()})


def streaming_summary(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Findings of the panel (numbers from the rows), one per line."""
    if not rows:
        return []
    r1 = [float(r["priv1_over_bound"]) for r in rows]
    r12 = [float(r["priv1_over_priv2"]) for r in rows]
    d = max(float(r["max_diff_rel"]) for r in rows)
    ok = all(int(r["priv1_state_bytes"]) == int(r["priv1_formula_bytes"]) for r in rows)
    smaller = sum(1 for x in r12 if x < 1)
    big = max(rows, key=lambda r: r["m"] * r["n"])
    larger = [r for r in rows if float(r["priv1_over_priv2"]) >= 1]
    full = sum(1 for r in larger if int(r["v_priv2"]) == min(int(r["m"]), int(r["n"])))
    return [
        f"Priv1 state (Figure 5) / the paper's (m + n) k / α words: {min(r1):.2f}–{max(r1):.2f} over "
        f"{len(rows)} sizes; bytes {'equal' if ok else 'DIFFER from'} the closed form "
        "8((2m + n)t + v_S v_T) + 16",
        f"Priv1 state / Priv2 state (Y_c, Z): {min(r12):.2f}–{max(r12):.2f}; Priv1 smaller at {smaller} of "
        f"{len(rows)} sizes (at the largest, {big['m']} × {big['n']}: {big['priv1_over_priv2']:.2f})"
        + (f"; where the Priv2 state is the smaller ({len(larger)} sizes), its v is the short side in "
           f"{full} of them, so its Z = S A + N2 is the whole noisy matrix (no compression)"
           if larger else ""),
        f"streamed vs one-shot Priv1 factorization, same seeds: max |M_stream − M_one-shot| / max |A| ≤ "
        f"{d:.1e} (rounding: the same state, summed in another order)"
        + ("" if math.isfinite(d) and d < 1e-9 else " — NOT at rounding level"),
    ]
