"""Upadhyay (NeurIPS 2018), "The Price of Differential Privacy for Low-Rank Factorization": Appendix J data.

The data/formula layer of the paper's reproduction: the nine tables of Appendix J (Tables 3-11)
transcribed as Python data, the closed-form "Expected Additive Error" formulas that generated their
theory columns, and small helpers to compare an "Optimal Error" column with simulation.

Source and provenance
---------------------
* **Quoted** (from the formula-damaged text ``/work/shared/papers/002_61bfc8c9ceda528a.txt``, lines
  640-930): every numeric cell of every table, the column names, the section headings and the input
  distributions where the text names them. The text lost every mathematical symbol, so: the k and
  alpha header cells are empty (they survive as the trailing ``| ||`` of each header; the text says
  "the third column is the desired rank ... the fourth column is the value of multiplicative
  approximation"), the formulas in headers such as "Our error ()" are gone, the names in section
  titles ("Private-Optimal-Space-", "various values of .") lost their symbols, and the tables have no
  captions. Table numbers are assigned by order of appearance and by the text's "presented in Table N".
  No numeric cell is missing; :class:`PaperRow` allows ``None`` for a lost value, but none occurs.
* **Reconstructed** (spec ``/work/shared/papers/spec-lowrank.md`` section 10, R-fit, re-checked here):
  the expected-error formulas, the fixed k and alpha of each table (read from the rows), the symbol
  names in titles ("LRF", "alpha", "k"), the Table 9 alpha sequence and the uniform widths.
* **epsilon and delta are lost.** The formulas read as epsilon = 1 and delta = 1/m (``ln(1/delta) =
  ln m``): e.g. ``sqrt(2k(m+n) ln m)`` is ``sqrt(k(m+n) 2 ln(1/delta))/epsilon``.
* The sampling intervals of the uniform inputs are lost as well ("sampled uniformly from the interval
  []").

The tables (spec section 10 "Columns")
--------------------------------------
Every table has the columns Rows (m), Columns (n), k, alpha, then the printed error columns.

========  =======  ===============================================================================
Table     Section  Content
========  =======  ===============================================================================
3         J.1      Private-Optimal-Space-LRF vs Hardt-Roth [HR12], k = 10, alpha = 0.25, varying
                   (m, n); total errors ``||A - U Sigma V^T||_F`` ("Our error", "Hardt-Roth [HR12]")
                   and ``||A - [A]_k||_F`` ("Optimal Error"). Two blocks: uniform real (14 rows) and
                   uniform integers (17 rows).
4         J.1.1    Additive error on rank-k inputs (columns k+1..n zeroed, so the total error is the
                   additive error), varying (m, n), k = 10, alpha = 0.25: ours, Hardt-Roth, expected.
5         J.1.2    As Table 4 for alpha = 0.10, 0.12, ..., 0.24 at m in {1800, 2800}, n = 200, k = 10.
6         J.1.3    As Table 4 for k = 10..19 at m in {450, 700}, n = 50, alpha = 0.25.
7         J.2      Private-Local-LRF (local model), uniform real entries, k = 10, alpha = 0.25:
                   "Our error" (an ``||A - U U^T A||_F``-type total error; formula lost) vs optimal.
8         J.2.1    Local additive error on rank-k inputs, varying (m, n): ours vs expected.
9         J.2.2    As Table 8 for alpha = 0.10..0.24 (step 0.02), m in {450, 700}, n = 50, k = 10.
10        J.2.3    As Table 8 for k = 10..19, m in {450, 700}, n = 50, alpha = 0.2.
11        J.3      Non-private Optimal-Space-LRF, uniform real entries: total error vs optimal.
========  =======  ===============================================================================

Expected Additive Error (R-fit; ln = natural log; Python floats, evaluated exactly as written)
---------------------------------------------------------------------------------------------
* Table 4: ``4*sqrt(2*n)*log(m)**1.5 + sqrt(k*m*log(m))`` (no alpha; k = 10).
  Max relative error over the 24 rows: 2.8e-16.
* Tables 5, 6: ``8*sqrt(2*n*J)*log(m)**1.5 + sqrt(2*k*(m+n)*log(m))`` with ``J = floor(k/(20*alpha))``.
  Max relative error 1.8e-16 (Table 5), 0 (Table 6: all 20 rows bit-identical). Without the floor
  (J = k/(20 alpha)) only 2 of 16 (Table 5) and 4 of 20 (Table 6) rows match to 1e-9.
* Tables 8-10 (local): ``floor(k/(50*alpha**2)) * sqrt(200*m*log(m))``. Max relative error 2.8e-16
  (Table 8), 2.0e-16 (Table 9, with the accumulated alphas below), 2.1e-16 (Table 10). Float
  flooring matters: ``10/(50*0.1**2) = 19.999999999999996``, so alpha = 0.1 gives 19, and alpha = 0.2
  gives ``10/2.0000000000000004`` -> 4 (Table 10).
* The remaining differences are 1-2 ulp: the paper's code evaluated the same quantity in another
  order (e.g. via epsilon and delta variables); ``sqrt(2*n*J)`` vs ``sqrt(2*n)*sqrt(J)`` etc. could
  not be told apart beyond that, so the spec's literal forms are used.
* **Table 9's alpha was accumulated in floating point**: ``alpha = 0.1`` then ``alpha += 0.02`` seven
  times, i.e. 0.1, 0.12000000000000001, 0.14, 0.16, 0.18, 0.19999999999999998, 0.21999999999999997,
  0.23999999999999996 (:func:`table9_alphas`). The printed "0.20" rows have floor factor 5, which
  needs ``alpha**2 <= 0.04`` in floats: the literal 0.2 gives 4 (as in Table 10), and so do
  ``0.1 + 0.02*i``, ``(5+i)/50`` and ``np.arange(0.1, 0.25, 0.02)``; the running sum (and also
  ``np.linspace(0.1, 0.24, 8)``) gives 5 and reproduces all 16 rows. The paper prints the rounded
  values ("0.10", "0.12", ...; "0.1" in the second block). Table 5's alphas may have been accumulated
  too; its ``floor(k/(20 alpha))`` cannot tell (both reproduce it), so the printed values are used.

Observations
------------
* Every experiment has **m > n** (m/n in [10, 11) or [15, 16) for Tables 3-4, [9, 10) or [14, 15)
  for Tables 5-11, n >= 50), so the algorithms ran in the swapped orientation.
* "Optimal Error" ``||A - [A]_k||_F`` vs i.i.d. Uniform[0, w) entries (:func:`fit_uniform_width`):
  Table 3 needs w ~ 4.7-4.8e3 (the m/n ~ 10 rows w ~ 4.74e3, the m/n ~ 15 rows w ~ 4.83e3: a
  systematic +-1% spread, larger than the +-0.3% simulation scatter, unexplained); Table 7 w ~ 500
  (+-0.3%, as expected from sampling); Table 11 w ~ 5.0e3 (+-0.3%). The spec's "4.7-4.8e3 for
  Tables 3, 11" holds for Table 3 only: Table 11 fits 5.0e3 with k = 10 (an interval of width 5000,
  e.g. [0, 5000), is the natural guess; Table 7's would be [0, 500)). A constant offset of the
  interval changes these by < 1% (the mean is absorbed by the top singular direction).
* Rows where "ours" exceeds the expected error: Table 4 at 1981 x 194 (2845.1 vs 2035.8, and larger
  than at 2945 x 194: possibly a typo, kept as printed; the text claims "consistently better"),
  Table 5 at (1800, 0.1) and (2800, 0.24) (the text: "except for certain values"), Table 6 at nine
  rows, Table 8 at m = 1190 and 1835 (the text: "except for [] and []").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from dpspectral._validation import as_generator

__all__ = [
    "TABLES",
    "TABLES_BY_NUMBER",
    "UNIFORM_INTEGERS",
    "UNIFORM_REAL",
    "FormulaCheck",
    "PaperRow",
    "PaperTable",
    "expected_additive_error",
    "expected_additive_error_local",
    "expected_additive_error_table4",
    "expected_additive_error_tables56",
    "fit_uniform_width",
    "formula_check",
    "get_table",
    "optimal_error_uniform",
    "table9_alphas",
]

UNIFORM_REAL = "uniform real"
UNIFORM_INTEGERS = "uniform integers"

#: Canonical keys of the printed columns (the paper's names are in :attr:`PaperTable.columns`).
OURS = "ours"
HARDT_ROTH = "hardt_roth"
OPTIMAL = "optimal"
EXPECTED = "expected"
TOTAL = "total"


# ----------------------------------------------------------------------------------------------------
# Expected-additive-error closed forms (spec section 10, R-fit)
# ----------------------------------------------------------------------------------------------------


def _check_dims(m: int, n: int, k: int, alpha: float) -> None:
    if m < 1 or n < 1 or k < 1:
        raise ValueError(f"m, n and k must be >= 1, got m={m}, n={n}, k={k}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")


def expected_additive_error_table4(m: int, n: int, k: int = 10, alpha: float = 0.25) -> float:
    """Expected additive error of Table 4 (J.1.1): ``4 sqrt(2n) (ln m)^{3/2} + sqrt(k m ln m)``.

    Parameters
    ----------
    m, n : int
        Rows and columns of the input (m > n in every experiment).
    k : int, default=10
        Target rank (Table 4 fixes k = 10).
    alpha : float, default=0.25
        Multiplicative error; it does **not** enter this formula (kept for a uniform signature).

    Returns
    -------
    float
        ``4*sqrt(2*n)*log(m)**1.5 + sqrt(k*m*log(m))`` in Python floats (reproduces the printed
        column to <= 2.8e-16 relative).
    """
    _check_dims(m, n, k, alpha)
    ln_m = math.log(m)
    return 4 * math.sqrt(2 * n) * ln_m**1.5 + math.sqrt(k * m * ln_m)


def expected_additive_error_tables56(m: int, n: int, k: int, alpha: float) -> float:
    """Expected additive error of Tables 5 and 6 (J.1.2, J.1.3).

    ``8 sqrt(2 n J) (ln m)^{3/2} + sqrt(2 k (m+n) ln m)`` with ``J = floor(k / (20 alpha))``.

    Parameters
    ----------
    m, n : int
        Rows and columns of the input.
    k : int
        Target rank.
    alpha : float
        Multiplicative error.

    Returns
    -------
    float
        The value in Python floats (``math.floor`` on the float quotient); e.g. m = 1800, n = 200,
        k = 10, alpha = 0.1 gives J = 5 and 7889.477972559828.

    Notes
    -----
    Read with epsilon = 1, delta = 1/m this is ``sigma_min sqrt(n) + sqrt(k (m+n) 2 ln(1/delta))/epsilon``
    with ``sigma_min = 16 ln(1/delta)^{3/2} sqrt(J/2)/epsilon`` (spec section 10; a reading, not a quote).
    """
    _check_dims(m, n, k, alpha)
    ln_m = math.log(m)
    J = math.floor(k / (20 * alpha))
    return 8 * math.sqrt(2 * n * J) * ln_m**1.5 + math.sqrt(2 * k * (m + n) * ln_m)


def expected_additive_error_local(m: int, n: int, k: int, alpha: float) -> float:
    """Expected additive error of the local-model Tables 8-10: ``floor(k/(50 alpha^2)) sqrt(200 m ln m)``.

    Parameters
    ----------
    m, n : int
        Rows and columns of the input; the formula does not depend on n.
    k : int
        Target rank.
    alpha : float
        Multiplicative error, as the paper's code had it in floats (for Table 9 use
        :func:`table9_alphas`, not the printed rounded values).

    Returns
    -------
    float
        ``floor(k/(50*alpha**2)) * sqrt(200*m*log(m))``. Float flooring matters: alpha = 0.1 gives
        ``floor(19.999999999999996) = 19`` and alpha = 0.2 gives 4.
    """
    _check_dims(m, n, k, alpha)
    return math.floor(k / (50 * alpha**2)) * math.sqrt(200 * m * math.log(m))


def table9_alphas(start: float = 0.1, step: float = 0.02, count: int = 8) -> tuple[float, ...]:
    """The alpha values of Table 9 as the paper's loop produced them (running float sum).

    Parameters
    ----------
    start, step : float, default=0.1, 0.02
        First value and increment.
    count : int, default=8
        Number of values.

    Returns
    -------
    tuple of float
        ``alpha = start`` then ``alpha += step`` (``count - 1`` times): 0.1, 0.12000000000000001, 0.14,
        0.16, 0.18, 0.19999999999999998, 0.21999999999999997, 0.23999999999999996. The 6th value
        gives ``floor(10/(50*alpha**2)) = 5``, as printed, where the literal 0.2 gives 4.
    """
    alphas: list[float] = []
    alpha = start
    for _ in range(count):
        alphas.append(alpha)
        alpha += step
    return tuple(alphas)


_FORMULAS: dict[int, Callable[[int, int, int, float], float]] = {
    4: expected_additive_error_table4,
    5: expected_additive_error_tables56,
    6: expected_additive_error_tables56,
    8: expected_additive_error_local,
    9: expected_additive_error_local,
    10: expected_additive_error_local,
}


def expected_additive_error(table_number: int, m: int, n: int, k: int, alpha: float) -> float:
    """The "Expected Additive Error" formula of a table, by table number (4, 5, 6, 8, 9 or 10).

    Parameters
    ----------
    table_number : int
        Table with an expected-error column.
    m, n, k : int
        Dimensions and rank.
    alpha : float
        Multiplicative error (for Table 9 the accumulated value, see :attr:`PaperRow.alpha_code`).

    Returns
    -------
    float
        The closed form of that table.
    """
    if table_number not in _FORMULAS:
        raise ValueError(f"table {table_number} has no expected-error column; tables: {sorted(_FORMULAS)}")
    return _FORMULAS[table_number](m, n, k, alpha)


# ----------------------------------------------------------------------------------------------------
# Data model
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PaperRow:
    """One printed row of an Appendix J table.

    Attributes
    ----------
    m, n : int
        Rows and columns ("Rows", "Columns").
    k : int
        Target rank (its header cell was lost).
    alpha : float
        Multiplicative error as printed (its header cell was lost).
    alpha_printed : str
        The printed string (Table 9 prints "0.10" in its first block and "0.1" in its second).
    values : tuple of float or None
        The printed error columns, aligned with :attr:`PaperTable.columns`; None where lost (none is).
    distribution : str or None
        Input distribution (:data:`UNIFORM_REAL` / :data:`UNIFORM_INTEGERS`) where the text states it.
    alpha_code : float
        alpha as the paper's code had it in floats: equal to ``alpha`` except in Table 9, where it
        is the running sum of :func:`table9_alphas`.
    """

    m: int
    n: int
    k: int
    alpha: float
    alpha_printed: str
    values: tuple[float | None, ...]
    distribution: str | None
    alpha_code: float


@dataclass(frozen=True)
class PaperTable:
    """One Appendix J table.

    Attributes
    ----------
    number : int
        Table number (3-11).
    section : str
        Appendix section ("J.1", "J.1.1", ..., "J.3").
    title : str
        Section title, with the lost symbols restored in brackets.
    algorithm : str
        The algorithm evaluated.
    private : bool
        Whether the algorithm is differentially private (Table 11 is not).
    varied : str
        What the rows vary: "dimensions", "alpha" or "k".
    k, alpha : int or None, float or None
        The fixed k and alpha of the table (None for the one that varies).
    distribution : str or None
        Input distribution if stated and common to all rows (Table 3 has it per row).
    rank_k_input : bool
        Whether columns k+1..n of the input were zeroed (then total error = additive error).
    columns : tuple of str
        The paper's names of the printed error columns (after Rows, Columns, k, alpha).
    keys : tuple of str
        Canonical keys of the same columns: "ours", "hardt_roth", "optimal", "expected", "total".
    rows : tuple of PaperRow
        The rows, in printed order.
    source_lines : tuple of int
        First (header) and last line of the table in the paper text.
    notes : str
        Transcription notes and ambiguities.
    """

    number: int
    section: str
    title: str
    algorithm: str
    private: bool
    varied: str
    k: int | None
    alpha: float | None
    distribution: str | None
    rank_k_input: bool
    columns: tuple[str, ...]
    keys: tuple[str, ...]
    rows: tuple[PaperRow, ...]
    source_lines: tuple[int, int]
    notes: str

    @property
    def has_expected(self) -> bool:
        """Whether the table has an "Expected Additive Error" column."""
        return EXPECTED in self.keys

    def column(self, key: str) -> tuple[float | None, ...]:
        """All values of a column by canonical key (e.g. ``"optimal"``) or by the paper's name.

        Parameters
        ----------
        key : str
            Canonical key or the paper's column name.

        Returns
        -------
        tuple of float or None
            One value per row.
        """
        j = self._index(key)
        return tuple(row.values[j] for row in self.rows)

    def value(self, row: PaperRow, key: str) -> float | None:
        """One cell: ``row``'s value in column ``key`` (canonical key or paper name)."""
        return row.values[self._index(key)]

    def _index(self, key: str) -> int:
        if key in self.keys:
            return self.keys.index(key)
        if key in self.columns:
            return self.columns.index(key)
        raise KeyError(f"table {self.number} has no column {key!r}; columns: {self.columns}")


# ----------------------------------------------------------------------------------------------------
# Transcription: (m, n, k, alpha as printed, *printed error columns), in printed order.
# Numbers are copied digit for digit from the text (lines given per table).
# ----------------------------------------------------------------------------------------------------

_Raw = tuple[tuple[Any, ...], ...]

_T3_REAL: _Raw = (
    (535, 50, 10, "0.25", 223649.755822, 552969.553361, 190493.286508),
    (581, 57, 10, "0.25", 254568.54093, 491061.894752, 213747.405532),
    (671, 65, 10, "0.25", 295444.274372, 470153.533646, 250629.568178),
    (705, 70, 10, "0.25", 317280.295345, 546149.007321, 269647.886009),
    (709, 68, 10, "0.25", 309627.397618, 664748.40864, 265799.14431),
    (764, 74, 10, "0.25", 344154.666385, 529618.155224, 291053.598305),
    (777, 50, 10, "0.25", 270458.465497, 436864.395454, 235057.184632),
    (861, 57, 10, "0.25", 311968.552859, 494331.526734, 269761.822539),
    (1020, 65, 10, "0.25", 367175.274642, 562322.74973, 317998.616149),
    (1054, 70, 10, "0.25", 389357.219211, 490379.45171, 338605.316751),
    (1061, 68, 10, "0.25", 386772.176623, 497648.401337, 334581.574424),
    (1137, 74, 10, "0.25", 413134.221292, 528692.808214, 364187.907915),
    (1606, 158, 10, "0.25", 736233.063187, 848827.366953, 654600.528481),
    (1733, 169, 10, "0.25", 786963.961154, 932695.219591, 706550.246496),
)
_T3_INT: _Raw = (
    (522, 50, 10, "0.25", 217497.498819, 496080.416815, 185817.742179),
    (555, 51, 10, "0.25", 229555.549295, 463022.451669, 195569.953293),
    (605, 60, 10, "0.25", 267625.256679, 525350.686285, 225614.671569),
    (714, 70, 10, "0.25", 316232.378407, 477066.707503, 270968.006565),
    (804, 51, 10, "0.25", 284102.975661, 548426.535153, 241720.509615),
    (899, 86, 10, "0.25", 402886.168791, 554702.285328, 346840.731082),
    (906, 60, 10, "0.25", 328747.816311, 455091.762984, 284433.77154),
    (913, 90, 10, "0.25", 412114.948358, 634520.151202, 358345.162361),
    (1061, 106, 10, "0.25", 486139.117249, 618819.626784, 423775.149619),
    (1063, 70, 10, "0.25", 395772.128472, 485655.074685, 339950.706212),
    (1305, 86, 10, "0.25", 488729.886028, 551863.893152, 427234.256941),
    (1383, 90, 10, "0.25", 513573.18853, 595195.801858, 451019.165808),
    (1486, 145, 10, "0.25", 677118.945777, 776008.62945, 600584.597101),
    (1481, 146, 10, "0.25", 670290.341074, 733574.295922, 600877.636254),
    (1635, 106, 10, "0.25", 616323.217861, 652624.510827, 541305.826364),
    (1848, 180, 10, "0.25", 836139.102987, 884143.446663, 755160.753156),
    (1983, 194, 10, "0.25", 896926.450848, 1005652.63777, 814717.343468),
)
_T4: _Raw = (
    (546, 50, 10, "0.25", 665.797531323, 13971.0499468, 818.4149601308452),
    (780, 50, 10, "0.25", 777.586619111, 16772.4716145, 915.2974642186384),
    (532, 51, 10, "0.25", 719.492368601, 23512.4449181, 817.9937262895351),
    (808, 51, 10, "0.25", 796.220653146, 14613.575971, 932.3276903711178),
    (655, 62, 10, "0.25", 845.550304391, 34161.5584705, 941.6210056415899),
    (951, 62, 10, "0.25", 903.21367849, 14101.7225434, 1055.244933017033),
    (891, 89, 10, "0.25", 1040.90463257, 17863.8728746, 1190.7199415503355),
    (1344, 89, 10, "0.25", 1273.05275389, 18646.717977, 1342.904603982863),
    (522, 50, 10, "0.25", 691.996294265, 23193.0915951, 806.8851715645378),
    (791, 50, 10, "0.25", 764.535817382, 16245.8487264, 919.3095213779045),
    (1449, 140, 10, "0.25", 1392.08606822, 20835.1618122, 1639.1144500265145),
    (2143, 140, 10, "0.25", 1518.90720786, 13521.4077062, 1827.1906485042728),
    (834, 80, 10, "0.25", 969.883327308, 22051.2853027, 1119.4759720856953),
    (1234, 80, 10, "0.25", 1005.64736332, 13617.4286089, 1257.2282266407094),
    (682, 64, 10, "0.25", 833.555604169, 19875.8713339, 965.2425226826088),
    (967, 64, 10, "0.25", 872.993347497, 15774.1091244, 1073.4637306190796),
    (924, 90, 10, "0.25", 1024.67412984, 20018.1421648, 1208.8365389072335),
    (1374, 90, 10, "0.25", 1168.33857697, 15267.6596425, 1357.3931639793143),
    (1981, 194, 10, "0.25", 2845.12484193, 19457.1056713, 2035.7863227397222),
    (2945, 194, 10, "0.25", 1938.83169063, 14210.6828353, 2263.796573983761),
    (1022, 100, 10, "0.25", 1130.29734323, 14839.3883841, 1298.0001587502882),
    (1530, 100, 10, "0.25", 1289.31236852, 14886.7349415, 1458.2654318931454),
    (1867, 182, 10, "0.25", 1806.04962492, 13443.8218792, 1952.5511080639412),
    (2757, 182, 10, "0.25", 1983.37270829, 13509.2925192, 2168.928742648721),
)
_T5: _Raw = (
    (1800, 200, 10, "0.1", 7889.477972559828, 8056.91337611, 18155.7964938),
    (1800, 200, 10, "0.12", 7114.371042156239, 6986.62461896, 16748.9933963),
    (1800, 200, 10, "0.14", 6234.5851506132285, 6171.60624904, 26904.2257957),
    (1800, 200, 10, "0.16", 6234.5851506132285, 5982.88510433, 16983.3495414),
    (1800, 200, 10, "0.18", 5190.996544903864, 4956.753081, 15746.884528),
    (1800, 200, 10, "0.2", 5190.996544903864, 5044.67253402, 14124.190425),
    (1800, 200, 10, "0.22", 5190.996544903864, 5012.95041479, 18030.3508985),
    (1800, 200, 10, "0.24", 5190.996544903864, 4951.97119364, 18013.7573095),
    (2800, 200, 10, "0.1", 8690.661799154163, 8550.34968943, 12281.3954039),
    (2800, 200, 10, "0.12", 7846.020358487806, 7607.18833498, 14296.1174909),
    (2800, 200, 10, "0.14", 6887.309251977769, 6494.49329799, 11674.4990144),
    (2800, 200, 10, "0.16", 6887.309251977769, 6603.16942717, 13860.6899516),
    (2800, 200, 10, "0.18", 5750.100760072804, 5417.53433303, 13425.7590356),
    (2800, 200, 10, "0.2", 5750.100760072804, 5612.34884207, 12731.6645942),
    (2800, 200, 10, "0.22", 5750.100760072804, 5524.92292528, 10703.6065701),
    (2800, 200, 10, "0.24", 5750.100760072804, 6450.77223767, 12610.5718019),
)
_T6: _Raw = (
    (450, 50, 10, "0.25", 1955.5571620375354, 1898.46860098, 20016.9761114),
    (450, 50, 11, "0.25", 1967.6211924065349, 2067.40361185, 24063.2388836),
    (450, 50, 12, "0.25", 1979.148228191017, 1915.44710901, 23731.1221157),
    (450, 50, 13, "0.25", 1990.2041707005583, 1975.07412336, 28148.8596261),
    (450, 50, 14, "0.25", 2000.8424524636212, 1937.32846282, 44746.5335036),
    (450, 50, 15, "0.25", 2395.058604918562, 2656.30764859, 38466.5764635),
    (450, 50, 16, "0.25", 2404.9864394488554, 2396.43074838, 51068.6496986),
    (450, 50, 17, "0.25", 2414.6085814624234, 2518.70267919, 59951.048053),
    (450, 50, 18, "0.25", 2423.9516422006986, 2412.15253004, 49652.4140161),
    (450, 50, 19, "0.25", 2433.0385823622364, 2421.29320351, 60475.2111995),
    (700, 50, 10, "0.25", 2210.505167206932, 2137.57732175, 18322.4177099),
    (700, 50, 11, "0.25", 2225.805492035416, 2244.60952111, 15915.3100262),
    (700, 50, 12, "0.25", 2240.424768215734, 2341.16599056, 18904.9300369),
    (700, 50, 13, "0.25", 2254.4465757300545, 2356.95623935, 23088.1856217),
    (700, 50, 14, "0.25", 2267.9386809066186, 2251.25863623, 29899.7509467),
    (700, 50, 15, "0.25", 2707.304866721297, 2948.78705396, 33654.4497548),
    (700, 50, 16, "0.25", 2719.895940227483, 2906.80323902, 36885.4983615),
    (700, 50, 17, "0.25", 2732.0993162013783, 2677.54649011, 36275.4890195),
    (700, 50, 18, "0.25", 2743.9487446109097, 2849.04550002, 37581.6388795),
    (700, 50, 19, "0.25", 2755.473345587197, 2658.52670606, 47314.5277845),
)
_T7: _Raw = (
    (460, 50, 10, "0.25", 26730.7062683, 18376.5128345),
    (486, 50, 10, "0.25", 28080.8322915, 18964.3784188),
    (516, 55, 10, "0.25", 30526.641347, 20870.0427927),
    (553, 56, 10, "0.25", 29787.7727748, 21862.0631087),
    (568, 59, 10, "0.25", 31632.1354094, 22760.6941581),
    (616, 64, 10, "0.25", 33981.2524409, 25159.7572035),
    (709, 50, 10, "0.25", 36449.213243, 23110.1192303),
    (730, 50, 10, "0.25", 35232.7419048, 23414.630713),
    (742, 50, 10, "0.25", 36167.200779, 23613.9643873),
    (805, 56, 10, "0.25", 38175.3014108, 26613.9920423),
    (817, 56, 10, "0.25", 38604.715515, 26721.6604408),
    (846, 59, 10, "0.25", 39702.5550961, 28179.965914),
    (907, 64, 10, "0.25", 41889.0912424, 30717.3035814),
    (924, 101, 10, "0.25", 50376.7374653, 40511.7157875),
    (1195, 130, 10, "0.25", 66049.3867783, 53122.2489582),
    (1262, 138, 10, "0.25", 70596.6678822, 56526.8303644),
    (1433, 101, 10, "0.25", 63976.8587336, 50810.8395315),
    (1698, 186, 10, "0.25", 91159.7299285, 77358.5067276),
    (1857, 130, 10, "0.25", 85812.7647106, 66588.7353796),
    (1956, 138, 10, "0.25", 82720.7186764, 70710.4258919),
)
_T8: _Raw = (
    (454, 50, 10, "0.25", 1591.70826988, 2236.0029137367846),
    (494, 53, 10, "0.25", 1659.12206578, 2348.466431926056),
    (511, 52, 10, "0.25", 1737.01336788, 2395.0391957271527),
    (562, 60, 10, "0.25", 2000.5063552, 2530.799729601783),
    (622, 66, 10, "0.25", 1580.25894963, 2683.7137939487484),
    (643, 70, 10, "0.25", 1962.46122303, 2735.6746706859394),
    (645, 70, 10, "0.25", 2172.80349046, 2740.583809665359),
    (702, 50, 10, "0.25", 1989.93430285, 2877.768275821911),
    (728, 52, 10, "0.25", 2059.26581077, 2938.6953727048567),
    (743, 53, 10, "0.25", 1993.78092528, 2973.406277353555),
    (844, 60, 10, "0.25", 2328.32881246, 3199.4689043324324),
    (853, 94, 10, "0.25", 2557.29517064, 3219.0131110666084),
    (925, 66, 10, "0.25", 2484.75888129, 3372.181278187486),
    (981, 70, 10, "0.25", 2198.25471982, 3487.6698882062387),
    (983, 70, 10, "0.25", 2597.33562269, 3491.7393627228817),
    (1055, 113, 10, "0.25", 3217.07445615, 3635.863197534171),
    (1190, 131, 10, "0.25", 4220.63858322, 3894.742583462755),
    (1320, 94, 10, "0.25", 2808.85540377, 4131.88571345083),
    (1583, 113, 10, "0.25", 3870.14181092, 4581.675389464531),
    (1713, 186, 10, "0.25", 4445.32063486, 4791.555177594492),
    (1835, 131, 10, "0.25", 5447.86868861, 4982.106342591863),
    (1900, 206, 10, "0.25", 4732.78855445, 5081.305279633226),
    (2213, 158, 10, "0.25", 4145.11357428, 5539.0037396773205),
    (2888, 206, 10, "0.25", 6234.47976474, 6436.032325032722),
)
_T9: _Raw = (
    (450, 50, 10, "0.10", 750.710811389, 14088.628533821675),
    (450, 50, 10, "0.12", 748.91024846, 9639.587944193776),
    (450, 50, 10, "0.14", 764.598714683, 7415.067649379828),
    (450, 50, 10, "0.16", 727.388618355, 5190.54735456588),
    (450, 50, 10, "0.18", 748.286674358, 4449.040589627896),
    (450, 50, 10, "0.20", 722.269126382, 3707.533824689914),
    (450, 50, 10, "0.22", 695.354504806, 2966.027059751931),
    (450, 50, 10, "0.24", 687.993333996, 2224.520294813948),
    (700, 50, 10, "0.1", 932.294964215, 18195.922623848826),
    (700, 50, 10, "0.12", 937.676945315, 12449.841795264987),
    (700, 50, 10, "0.14", 939.872486613, 9576.801380973067),
    (700, 50, 10, "0.16", 942.039074746, 6703.760966681148),
    (700, 50, 10, "0.18", 909.247538784, 5746.08082858384),
    (700, 50, 10, "0.20", 948.147219877, 4788.400690486534),
    (700, 50, 10, "0.22", 860.725294579, 3830.7205523892267),
    (700, 50, 10, "0.24", 882.673634462, 2873.04041429192),
)
_T10: _Raw = (
    (450, 50, 10, "0.2", 739.297184071, 2966.027059751931),
    (450, 50, 11, "0.2", 792.139775851, 3707.533824689914),
    (450, 50, 12, "0.2", 827.193502967, 3707.533824689914),
    (450, 50, 13, "0.2", 857.238846842, 4449.040589627896),
    (450, 50, 14, "0.2", 881.890196768, 4449.040589627896),
    (450, 50, 15, "0.2", 877.407208023, 5190.54735456588),
    (450, 50, 16, "0.2", 955.688935848, 5190.54735456588),
    (450, 50, 17, "0.2", 942.773082147, 5932.054119503862),
    (450, 50, 18, "0.2", 1019.96432587, 5932.054119503862),
    (450, 50, 19, "0.2", 1033.82124639, 6673.560884441846),
    (700, 50, 10, "0.2", 921.415775041, 3830.7205523892267),
    (700, 50, 11, "0.2", 903.693226831, 4788.400690486534),
    (700, 50, 12, "0.2", 961.550364155, 4788.400690486534),
    (700, 50, 13, "0.2", 1055.58902486, 5746.08082858384),
    (700, 50, 14, "0.2", 1102.54543656, 5746.08082858384),
    (700, 50, 15, "0.2", 1139.854348, 6703.760966681148),
    (700, 50, 16, "0.2", 1188.983938, 6703.760966681148),
    (700, 50, 17, "0.2", 1216.1836631, 7661.441104778453),
    (700, 50, 18, "0.2", 1207.76296999, 7661.441104778453),
    (700, 50, 19, "0.2", 1303.58983727, 8619.121242875759),
)
_T11: _Raw = (
    (498, 52, 10, "0.25", 203636.487171, 197577.81058),
    (565, 62, 10, "0.25", 241322.216245, 234585.873351),
    (600, 66, 10, "0.25", 258293.615653, 251581.697045),
    (634, 68, 10, "0.25", 272545.864945, 265331.39875),
    (701, 50, 10, "0.25", 236960.63674, 230358.636959),
    (719, 76, 10, "0.25", 311278.453125, 302812.926139),
    (736, 50, 10, "0.25", 243505.180195, 236083.969219),
    (775, 52, 10, "0.25", 255720.933052, 248391.690752),
    (780, 86, 10, "0.25", 348405.00368, 340148.071775),
    (818, 90, 10, "0.25", 364630.812101, 355410.694701),
    (888, 62, 10, "0.25", 306043.651247, 297740.00906),
    (954, 66, 10, "0.25", 330351.384387, 321254.463405),
    (966, 68, 10, "0.25", 337962.399198, 329606.663985),
    (1102, 76, 10, "0.25", 385372.431742, 376530.056249),
    (1149, 127, 10, "0.25", 529627.844251, 516435.343938),
    (1184, 130, 10, "0.25", 545340.762064, 531377.485355),
    (1206, 86, 10, "0.25", 434705.450777, 424823.785653),
    (1288, 90, 10, "0.25", 461257.277745, 451382.89648),
    (1549, 169, 10, "0.25", 729124.244066, 701894.583657),
    (1612, 113, 10, "0.25", 587309.340404, 575305.302626),
    (1802, 127, 10, "0.25", 666645.03627, 650960.768662),
    (1866, 130, 10, "0.25", 686638.036543, 669968.400955),
    (2367, 169, 10, "0.25", 904435.683545, 870912.869511),
)


def _rows(raw: _Raw, n_values: int, distribution: str | None = None,
          alpha_code: tuple[float, ...] | None = None) -> tuple[PaperRow, ...]:
    out: list[PaperRow] = []
    block_alphas: list[str] = []
    for m, n, k, alpha_text, *values in raw:
        if len(values) != n_values:
            raise AssertionError(f"row {m} x {n}: {len(values)} values, expected {n_values}")
        alpha = float(alpha_text)
        code = alpha
        if alpha_code is not None:
            # Table 9: the i-th alpha of each (m, n) block is the i-th running-sum value.
            if block_alphas and float(block_alphas[-1]) >= alpha:
                block_alphas = []
            block_alphas.append(alpha_text)
            code = alpha_code[len(block_alphas) - 1]
            if abs(code - alpha) > 1e-12:
                raise AssertionError(f"Table 9 alpha {alpha_text} does not match the running sum {code!r}")
        out.append(PaperRow(m=int(m), n=int(n), k=int(k), alpha=alpha, alpha_printed=alpha_text,
                            values=tuple(None if v is None else float(v) for v in values),
                            distribution=distribution, alpha_code=code))
    return tuple(out)


_OUR_ERROR = ("Our error", "Hardt-Roth [HR12]", "Optimal Error")
_ADDITIVE_4 = ("Our additive error", "Hardt-Roth Additive Error", "Expected Additive Error")
_ADDITIVE_56 = ("Expected Additive Error", "Our additive error", "Hardt-Roth Additive Error")
_LOCAL_ADDITIVE = ("Our Additive Error", "Expected Additive Error")

_HEADER_NOTE = ("Header: the k and alpha header cells are empty and displaced to the end of the header "
                "line ('| ||'); the rows read m | n | k | alpha | printed columns.")

TABLES: tuple[PaperTable, ...] = (
    PaperTable(
        number=3, section="J.1", title="Empirical Evaluation of Private-Optimal-Space-[LRF]",
        algorithm="Private-Optimal-Space-LRF (Figure 2) vs Hardt-Roth [HR12]", private=True,
        varied="dimensions", k=10, alpha=0.25, distribution=None, rank_k_input=False,
        columns=_OUR_ERROR, keys=(OURS, HARDT_ROTH, OPTIMAL),
        rows=_rows(_T3_REAL, 3, UNIFORM_REAL) + _rows(_T3_INT, 3, UNIFORM_INTEGERS),
        source_lines=(655, 686),
        notes=("First header cell 'Distribution of []' (symbol lost, A) is a merged row-spanning cell: its "
               "value is printed on the first row of each block only ('Uniform real': 14 rows, 'Uniform "
               "integers': 17 rows) and the continuation rows carry an extra empty trailing cell. "
               + _HEADER_NOTE + " The text confirms 'the third column is the desired rank ..., the "
               "fourth column is the value of multiplicative approximation'. Columns: total errors "
               "||A - U Sigma V^T||_F of ours and of HR12, and ||A - [A]_k||_F. Rows are not sorted "
               "(1486 x 145 precedes 1481 x 146); kept in printed order. Intervals of the uniform "
               "distributions are lost."),
    ),
    PaperTable(
        number=4, section="J.1.1", title="Empirical Evaluation of Additive Error for various dimension",
        algorithm="Private-Optimal-Space-LRF (Figure 2) vs Hardt-Roth [HR12]", private=True,
        varied="dimensions", k=10, alpha=0.25, distribution=None, rank_k_input=True,
        columns=_ADDITIVE_4, keys=(OURS, HARDT_ROTH, EXPECTED),
        rows=_rows(_T4, 3), source_lines=(687, 712),
        notes=(_HEADER_NOTE + " The header names 5 of the 7 columns. The input distribution is not "
               "stated (J.1 uses uniform reals and uniform integers). The table directly follows "
               "Table 3 in the text (no blank line). Row 1981 x 194: our additive error 2845.12484193 "
               "exceeds the expected 2035.79 and the value at 2945 x 194 (1938.83), the only such row "
               "although the text says 'consistently perform better': possibly a typo, kept as printed."),
    ),
    PaperTable(
        number=5, section="J.1.2",
        title="Empirical Evaluation of Additive Error for various values of [alpha]",
        algorithm="Private-Optimal-Space-LRF (Figure 2) vs Hardt-Roth [HR12]", private=True,
        varied="alpha", k=10, alpha=None, distribution=None, rank_k_input=True,
        columns=_ADDITIVE_56, keys=(EXPECTED, OURS, HARDT_ROTH),
        rows=_rows(_T5, 3), source_lines=(732, 749),
        notes=(_HEADER_NOTE + " Column order differs from Table 4: expected error first. alpha = 0.1, "
               "0.12, ..., 0.24 for m in {1800, 2800}, n = 200, k = 10. Ours exceeds the expected error "
               "at (1800, 0.1) and (2800, 0.24) (text: 'except for certain values of the dimensions "
               "and multiplicative error'). Whether alpha was float-accumulated (as in Table 9) cannot "
               "be told: floor(k/(20 alpha)) is the same either way. Distribution not stated."),
    ),
    PaperTable(
        number=6, section="J.1.3", title="Empirical Evaluation of Additive Error for various values of [k]",
        algorithm="Private-Optimal-Space-LRF (Figure 2) vs Hardt-Roth [HR12]", private=True,
        varied="k", k=None, alpha=0.25, distribution=None, rank_k_input=True,
        columns=_ADDITIVE_56, keys=(EXPECTED, OURS, HARDT_ROTH),
        rows=_rows(_T6, 3), source_lines=(758, 779),
        notes=(_HEADER_NOTE + " k = 10..19 for m in {450, 700}, n = 50, alpha = 0.25. The expected "
               "error jumps at k = 15 where floor(k/(20 alpha)) = floor(k/5) goes from 2 to 3. The "
               "text says ours is 'almost the same as' the expected error (ours is larger in 9 rows). "
               "Distribution not stated."),
    ),
    PaperTable(
        number=7, section="J.2", title="Empirical Evaluation of Private-Local-[LRF]",
        algorithm="Private-Local-LRF (Figure 9; the text says 'Figure 2')", private=True,
        varied="dimensions", k=10, alpha=0.25, distribution=UNIFORM_REAL, rank_k_input=False,
        columns=("Our error", "Optimal Error"), keys=(OURS, OPTIMAL),
        rows=_rows(_T7, 2, UNIFORM_REAL), source_lines=(783, 804),
        notes=(_HEADER_NOTE + " Headers 'Our error ()' and 'Optimal Error ()': the formulas in "
               "parentheses are lost (an ||A - U U^T A||_F-type total error and ||A - [A]_k||_F). "
               "Entries 'uniform real number between []' (interval lost)."),
    ),
    PaperTable(
        number=8, section="J.2.1", title="Empirical Evaluation of Additive Error for Various Dimension",
        algorithm="Private-Local-LRF (Figure 9)", private=True,
        varied="dimensions", k=10, alpha=0.25, distribution=None, rank_k_input=True,
        columns=_LOCAL_ADDITIVE, keys=(OURS, EXPECTED),
        rows=_rows(_T8, 2), source_lines=(806, 831),
        notes=(_HEADER_NOTE + " Ours exceeds the expected error at m = 1190 and m = 1835 (n = 131), "
               "matching the text's 'except for [] and []'. Distribution not stated (presumably "
               "uniform real as in Table 7)."),
    ),
    PaperTable(
        number=9, section="J.2.2",
        title="Empirical Evaluation of Additive Error for various values of [alpha]",
        algorithm="Private-Local-LRF (Figure 9)", private=True,
        varied="alpha", k=10, alpha=None, distribution=None, rank_k_input=True,
        columns=_LOCAL_ADDITIVE, keys=(OURS, EXPECTED),
        rows=_rows(_T9, 2, alpha_code=table9_alphas()), source_lines=(843, 860),
        notes=(_HEADER_NOTE + " alpha printed '0.10', '0.12', ..., '0.24' in the m = 450 block but "
               "'0.1' (then '0.12', ..., '0.20', ...) in the m = 700 block. The expected errors need the "
               "running float sum alpha = 0.1; alpha += 0.02 (table9_alphas): the printed '0.20' rows "
               "have floor(k/(50 alpha^2)) = 5, which the literal 0.2 does not give (4, as in Table 10). "
               "Text: 'We ran our algorithm for [450] and [700] with [n = 50] and [alpha] ranging from [] "
               "to [] in the step-size of []'. Distribution not stated."),
    ),
    PaperTable(
        number=10, section="J.2.3", title="Empirical Evaluation of Additive Error for various values of [k]",
        algorithm="Private-Local-LRF (Figure 9)", private=True,
        varied="k", k=None, alpha=0.2, distribution=None, rank_k_input=True,
        columns=_LOCAL_ADDITIVE, keys=(OURS, EXPECTED),
        rows=_rows(_T10, 2), source_lines=(861, 882),
        notes=(_HEADER_NOTE + " k = 10..19 for m in {450, 700}, n = 50, alpha = 0.2 (the literal: "
               "floor(10/(50*0.2**2)) = 4). The table directly follows Table 9 and precedes the J.2.3 "
               "text. Distribution not stated."),
    ),
    PaperTable(
        number=11, section="J.3", title="Empirical Evaluation of Optimal-Space-[LRF]",
        algorithm="Optimal-Space-LRF (non-private)", private=False,
        varied="dimensions", k=10, alpha=0.25, distribution=UNIFORM_REAL, rank_k_input=False,
        columns=("Total error", "Optimal Error"), keys=(TOTAL, OPTIMAL),
        rows=_rows(_T11, 2, UNIFORM_REAL), source_lines=(890, 914),
        notes=(_HEADER_NOTE + " Headers 'Total error ()' and 'Optimal Error ()': formulas lost. The "
               "paragraph after the table says 'Private-Local-' and 'Figure LABEL:fig:spacelow' (a "
               "copy-paste slip: J.3 is the non-private Optimal-Space-LRF, Appendix L.1). Entries "
               "'uniform real number between []' (interval lost)."),
    ),
)

TABLES_BY_NUMBER: Mapping[int, PaperTable] = MappingProxyType({t.number: t for t in TABLES})


def get_table(number: int) -> PaperTable:
    """The Appendix J table with this number (3-11)."""
    try:
        return TABLES_BY_NUMBER[number]
    except KeyError:
        raise KeyError(f"no Appendix J table {number}; tables: {sorted(TABLES_BY_NUMBER)}") from None


# ----------------------------------------------------------------------------------------------------
# Checks against the printed columns
# ----------------------------------------------------------------------------------------------------


class FormulaCheck(NamedTuple):
    """One row of :func:`formula_check`."""

    table: int
    m: int
    n: int
    k: int
    alpha: float
    printed: float
    computed: float
    rel_error: float


def formula_check() -> tuple[FormulaCheck, ...]:
    """Recompute every printed "Expected Additive Error" (Tables 4, 5, 6, 8, 9, 10).

    Returns
    -------
    tuple of FormulaCheck
        ``(table, m, n, k, alpha, printed, computed, rel_error)`` per row, alpha being the value the
        formula was evaluated at (:attr:`PaperRow.alpha_code`: the running sum for Table 9) and
        ``rel_error = |computed - printed| / |printed|``. All are <= 3e-16.
    """
    out: list[FormulaCheck] = []
    for table in TABLES:
        if not table.has_expected:
            continue
        for row in table.rows:
            printed = table.value(row, EXPECTED)
            if printed is None:
                continue
            computed = expected_additive_error(table.number, row.m, row.n, row.k, row.alpha_code)
            out.append(FormulaCheck(table.number, row.m, row.n, row.k, row.alpha_code, printed, computed,
                                    abs(computed - printed) / abs(printed)))
    return tuple(out)


# ----------------------------------------------------------------------------------------------------
# Optimal error of uniform inputs
# ----------------------------------------------------------------------------------------------------


def optimal_error_uniform(m: int, n: int, k: int, width: float, rng: Any = None) -> float:
    """``||A - [A]_k||_F`` for an m x n matrix with i.i.d. Uniform[0, width) entries.

    Parameters
    ----------
    m, n : int
        Shape of A.
    k : int
        Rank of the best approximation ``[A]_k`` (0 <= k).
    width : float
        Width of the sampling interval (> 0).
    rng : numpy.random.Generator, int or None
        Randomness (a Generator, a seed or None).

    Returns
    -------
    float
        ``sqrt(sum_{i > k} sigma_i(A)^2)`` from numpy's singular values.
    """
    if m < 1 or n < 1 or k < 0:
        raise ValueError(f"need m, n >= 1 and k >= 0, got m={m}, n={n}, k={k}")
    if not width > 0:
        raise ValueError(f"width must be > 0, got {width}")
    gen = as_generator(rng)
    A = gen.uniform(0.0, width, size=(m, n))
    s = np.linalg.svd(A, compute_uv=False)
    return math.sqrt(float(np.sum(s[k:] ** 2)))


def fit_uniform_width(table_number: int, rng: Any = None, max_rows: int | None = 12) -> float:
    """Interval width w such that Uniform[0, w) inputs reproduce a table's "Optimal Error" column.

    ``||A - [A]_k||_F`` scales linearly with w, so each used row is simulated once at w = 1
    (``s_i``) and w minimises the relative squared error ``sum_i (1 - w s_i / p_i)^2`` against the
    printed values ``p_i``: ``w = sum(r_i) / sum(r_i^2)`` with ``r_i = s_i / p_i``.

    Parameters
    ----------
    table_number : int
        3, 7 or 11 (the tables with an "Optimal Error" column and a non-degenerate input). For
        Table 3 both blocks are used (uniform integers on [0, W] behave like reals of width ~W + 1).
    rng : numpy.random.Generator, int or None
        Randomness.
    max_rows : int or None, default=12
        Use at most this many rows, evenly spaced in printed order (None: all rows). With 12 rows
        this takes ~0.1-0.2 s.

    Returns
    -------
    float
        The fitted width: about 4.76e3 (Table 3; 4.77e3 with all rows), 500 (Table 7), 5.0e3 (Table 11).
    """
    table = get_table(table_number)
    if OPTIMAL not in table.keys or table.rank_k_input:
        raise ValueError(f"table {table_number} has no 'Optimal Error' column of a full-rank input")
    rows = table.rows
    if max_rows is not None and max_rows < len(rows):
        if max_rows < 1:
            raise ValueError(f"max_rows must be >= 1, got {max_rows}")
        idx = np.unique(np.linspace(0, len(rows) - 1, max_rows).round().astype(int))
        rows = tuple(rows[i] for i in idx)
    gen = as_generator(rng)
    ratios: list[float] = []
    for row in rows:
        printed = table.value(row, OPTIMAL)
        if printed is None:
            continue
        ratios.append(optimal_error_uniform(row.m, row.n, row.k, 1.0, gen) / printed)
    r = np.asarray(ratios)
    return float(r.sum() / np.sum(r**2))
