"""Shared output helpers for experiments: tidy run tables, summaries, Markdown and PNG plots.

Every experiment produces a list of *runs*: flat dicts with one key per column (the grid
coordinates, e.g. ``method`` / ``epsilon`` / ``repeat``, and the measured metrics). The helpers
here turn such lists into

* tidy files: :func:`write_runs` (CSV or JSON by the file suffix), :func:`read_runs`,
  :func:`write_json`;
* aggregated rows: :func:`summarize` (mean, standard deviation and count of each metric per group);
* text: :func:`markdown_table`, :func:`text_table`, :func:`format_mean_sd`;
* figures: :func:`plot_metric_vs_epsilon` (one panel) and :func:`plot_metrics_vs_epsilon`
  (several panels, one shared legend below them), with the mean and +-1 sd error bars over repeats,
  a dashed line per non-private reference and a logarithmic epsilon axis.

Plots use matplotlib's object-oriented API on an Agg canvas (``matplotlib.figure.Figure``), never
``pyplot``, so they work headless and leave no global state behind.

Privacy
-------
These helpers only format what they are given. The experiments decide what is printed: the
evaluation metrics of a private run typically read the non-private data (captured energy, distance
to the exact subspace, test accuracy) and are reported as non-private *evaluation* numbers, not
releases.
"""

from __future__ import annotations

import csv
import json
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "format_mean_sd",
    "group_rows",
    "markdown_table",
    "plot_metric_vs_epsilon",
    "plot_metrics_vs_epsilon",
    "read_runs",
    "summarize",
    "text_table",
    "write_json",
    "write_runs",
]

Row = Mapping[str, Any]
PathLike = str | Path


# ----------------------------------------------------------------------------------------------
# files
# ----------------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """A JSON-serialisable version of ``value`` (NumPy scalars and arrays, paths, enums, sets)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            return None  # JSON has no NaN: null
        return f if math.isfinite(f) else str(f)  # nor infinity: "inf" / "-inf"
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, str):
        return value
    return str(value)


def write_json(obj: Any, path: PathLike, *, indent: int = 2) -> Path:
    """Write ``obj`` as JSON, converting NumPy values; NaN becomes null and infinities ``"inf"``.

    Parameters
    ----------
    obj : any
        Dicts, lists, scalars, NumPy arrays and scalars, paths.
    path : str or Path
        Destination; parent folders are created.
    indent : int, default=2

    Returns
    -------
    Path
        The path written.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(_jsonable(obj), indent=indent) + "\n", encoding="utf-8")
    return p


def _columns_of(rows: Sequence[Row], columns: Sequence[str] | None) -> list[str]:
    if columns is not None:
        return list(columns)
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(str(key), None)
    return list(seen)


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (np.bool_, bool)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, (list, tuple, np.ndarray, Mapping)):
        return json.dumps(_jsonable(value))
    return str(value)


def write_runs(rows: Sequence[Row], path: PathLike, *, columns: Sequence[str] | None = None) -> Path:
    """Write a tidy table of runs (one dict per run) as CSV or JSON, chosen by the suffix.

    Parameters
    ----------
    rows : sequence of mappings
        One run per mapping, keys are column names. Missing keys are written as empty cells
        (CSV) or ``null`` (JSON).
    path : str or Path
        ``*.csv`` or ``*.json``; parent folders are created.
    columns : sequence of str, optional
        Column order (and selection). Default: every key, in order of first appearance.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    ValueError
        If the suffix is neither ``.csv`` nor ``.json``.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise ValueError(f"The 'path' parameter of write_runs must end in .csv or .json. Got {str(p)!r}.")
    cols = _columns_of(rows, columns)
    p.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".json":
        return write_json([{c: row.get(c) for c in cols} for row in rows], p)
    with p.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(cols)
        for row in rows:
            writer.writerow([_csv_cell(row.get(c)) for c in cols])
    return p


def _parse_cell(cell: str) -> Any:
    if cell == "":
        return None
    if cell in ("True", "False"):
        return cell == "True"
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return cell


def read_runs(path: PathLike) -> list[dict[str, Any]]:
    """Read a table written by :func:`write_runs` back (numbers and booleans parsed in CSV files).

    Parameters
    ----------
    path : str or Path
        A ``*.csv`` or ``*.json`` file.

    Returns
    -------
    list of dict
    """
    p = Path(path)
    if p.suffix.lower() == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"{str(p)!r} does not hold a list of runs.")
        return [dict(r) for r in data]
    with p.open(newline="", encoding="utf-8") as f:
        return [{k: _parse_cell(v) for k, v in row.items()} for row in csv.DictReader(f)]


# ----------------------------------------------------------------------------------------------
# aggregation
# ----------------------------------------------------------------------------------------------


def group_rows(rows: Iterable[Row], by: Sequence[str]) -> dict[tuple[Any, ...], list[Row]]:
    """Group runs by the values of the columns ``by``, keeping first-appearance order."""
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(row.get(c) for c in by), []).append(row)
    return groups


def _finite_values(rows: Sequence[Row], metric: str) -> np.ndarray:
    vals = []
    for row in rows:
        v = row.get(metric)
        if isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v)):
            vals.append(float(v))
    return np.asarray(vals, dtype=float)


def summarize(
    rows: Sequence[Row],
    by: Sequence[str],
    metrics: Sequence[str],
    *,
    keep: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Mean, sample standard deviation and count of each metric per group.

    Parameters
    ----------
    rows : sequence of mappings
        Runs.
    by : sequence of str
        Grouping columns (e.g. ``("method", "epsilon")``); groups keep first-appearance order.
    metrics : sequence of str
        Numeric columns to aggregate; non-finite and missing values are ignored.
    keep : sequence of str, default=()
        Other columns copied from the first run of each group (e.g. ``"certified"``).

    Returns
    -------
    list of dict
        One row per group with the ``by`` and ``keep`` columns, ``n_runs``, and for each metric
        ``<metric>_mean``, ``<metric>_sd`` (``ddof=1``; NaN with fewer than two values) and
        ``<metric>_n``.
    """
    out: list[dict[str, Any]] = []
    for key, members in group_rows(rows, by).items():
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        for c in keep:
            row[c] = members[0].get(c)
        row["n_runs"] = len(members)
        for m in metrics:
            vals = _finite_values(members, m)
            row[f"{m}_mean"] = float(vals.mean()) if vals.size else math.nan
            row[f"{m}_sd"] = float(vals.std(ddof=1)) if vals.size > 1 else math.nan
            row[f"{m}_n"] = int(vals.size)
        out.append(row)
    return out


# ----------------------------------------------------------------------------------------------
# text
# ----------------------------------------------------------------------------------------------


def format_mean_sd(mean: Any, sd: Any = None, *, digits: int = 3) -> str:
    """``"0.912 ± 0.013"``; just the mean when ``sd`` is missing or NaN; ``"—"`` for a NaN mean."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    text = f"{float(mean):.{digits}f}"
    if sd is not None and isinstance(sd, numbers.Real) and math.isfinite(float(sd)):
        text += f" ± {float(sd):.{digits}f}"
    return text


def _format_cell(value: Any, floatfmt: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            return "—"
        if math.isinf(f):
            return "∞" if f > 0 else "-∞"
        return format(f, floatfmt)
    return str(value)


def _cells(
    rows: Sequence[Row],
    columns: Sequence[str],
    headers: Sequence[str] | None,
    floatfmt: str,
    formatters: Mapping[str, Callable[[Row], str]] | None,
) -> tuple[list[str], list[list[str]]]:
    if headers is not None and len(headers) != len(columns):
        raise ValueError(
            f"The 'headers' parameter must have one entry per column ({len(columns)}). "
            f"Got {len(headers)} instead."
        )
    fmts = formatters or {}
    head = [str(h) for h in (headers if headers is not None else columns)]
    body = [
        [fmts[c](row) if c in fmts else _format_cell(row.get(c), floatfmt) for c in columns] for row in rows
    ]
    return head, body


def markdown_table(
    rows: Sequence[Row],
    columns: Sequence[str],
    *,
    headers: Sequence[str] | None = None,
    floatfmt: str = ".4g",
    formatters: Mapping[str, Callable[[Row], str]] | None = None,
) -> str:
    """A GitHub-flavoured Markdown table.

    Parameters
    ----------
    rows : sequence of mappings
    columns : sequence of str
        Keys to show, in order. A column may also be a pseudo-column computed by ``formatters``.
    headers : sequence of str, optional
        Header texts (default: the column names).
    floatfmt : str, default=".4g"
        Format spec of floats; NaN is shown as ``—``, booleans as yes/no.
    formatters : mapping of column -> callable(row) -> str, optional
        Custom cell text, e.g. ``{"energy": lambda r: format_mean_sd(r["e_mean"], r["e_sd"])}``.

    Returns
    -------
    str
        The table, ending in a newline.
    """
    head, body = _cells(rows, columns, headers, floatfmt, formatters)

    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    lines = ["| " + " | ".join(esc(h) for h in head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in body]
    return "\n".join(lines) + "\n"


def text_table(
    rows: Sequence[Row],
    columns: Sequence[str],
    *,
    headers: Sequence[str] | None = None,
    floatfmt: str = ".4g",
    formatters: Mapping[str, Callable[[Row], str]] | None = None,
) -> str:
    """A plain-text table with aligned columns, for terminals (same arguments as markdown_table)."""
    head, body = _cells(rows, columns, headers, floatfmt, formatters)
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(head)]
    sep = "  "
    lines = [sep.join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    lines.append(sep.join("-" * w for w in widths))
    lines += [sep.join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# plots
# ----------------------------------------------------------------------------------------------


def _new_figure(figsize: tuple[float, float]) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _references_for(reference: float | Mapping[str, float] | None, default_label: str) -> dict[str, float]:
    if reference is None:
        return {}
    if isinstance(reference, Mapping):
        return {str(k): float(v) for k, v in reference.items()}
    return {default_label: float(reference)}


def _plot_groups(ax: Any, rows: Sequence[Row], metric: str, *, group: str, x: str, logx: bool,
                 dodge: float) -> set[float]:
    """One error-bar line per group (mean ± 1 sd of ``metric`` at each finite ``x``); the x values drawn."""
    markers = "osD^vP*X"
    groups = group_rows(rows, (group,))
    all_x: set[float] = set()
    for i, (key, members) in enumerate(groups.items()):
        by_x: dict[float, list[Row]] = {}
        for row in members:
            xv = row.get(x)
            if isinstance(xv, numbers.Real) and not isinstance(xv, bool) and math.isfinite(float(xv)):
                by_x.setdefault(float(xv), []).append(row)
        if not by_x:
            continue
        xs = sorted(by_x)
        all_x.update(xs)
        means, sds = [], []
        for xv in xs:
            vals = _finite_values(by_x[xv], metric)
            means.append(float(vals.mean()) if vals.size else math.nan)
            sds.append(float(vals.std(ddof=1)) if vals.size > 1 else 0.0)
        # Offset the groups slightly along x so that their error bars do not hide each other.
        shift = (i - (len(groups) - 1) / 2) * dodge
        xs_plot = [xv * math.exp(shift) if logx else xv + shift * (max(xs) - min(xs) or 1.0) for xv in xs]
        ax.errorbar(xs_plot, means, yerr=sds, marker=markers[i % len(markers)], capsize=3, linewidth=1.5,
                    markersize=5, label=str(key[0]))
    return all_x


def _style_axes(ax: Any, all_x: set[float], *, logx: bool, xlabel: str, ylabel: str, title: str | None,
                legend: bool) -> None:
    """Scale, ticks at the grid values, labels, grid and legend of a panel."""
    if logx:
        ax.set_xscale("log")
    if 0 < len(all_x) <= 12:  # label the grid values themselves (0.1, 0.5, 1, 2), not powers of ten
        from matplotlib.ticker import NullFormatter

        ticks = sorted(all_x)
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if legend:
        ax.legend(loc="best", fontsize="small")


def plot_metric_vs_epsilon(
    rows: Sequence[Row],
    metric: str,
    path: PathLike | None = None,
    *,
    ax: Any = None,
    group: str = "method",
    x: str = "epsilon",
    reference: float | Mapping[str, float] | None = None,
    ylabel: str | None = None,
    xlabel: str = "privacy parameter ε (log scale)",
    title: str | None = None,
    logx: bool = True,
    legend: bool = True,
    dodge: float = 0.025,
    figsize: tuple[float, float] = (6.0, 4.0),
    dpi: int = 150,
) -> Any:
    """Plot the mean of ``metric`` against epsilon, one line per group, with ±1 sd error bars.

    Parameters
    ----------
    rows : sequence of mappings
        Runs (one per repeat); rows whose ``x`` is missing or not finite (e.g. a non-private row
        with ``epsilon = inf``) are skipped -- pass their value as ``reference`` instead.
    metric : str
        The column on the y axis.
    path : str or Path, optional
        Where to save a PNG (only when this function creates the figure, i.e. ``ax`` is None).
    ax : matplotlib Axes, optional
        Draw into this panel instead of a new figure.
    group : str, default="method"
        One line per distinct value of this column.
    x : str, default="epsilon"
        The x column.
    reference : float or mapping of label -> float, optional
        Horizontal dashed line(s), e.g. the non-private value of the metric.
    ylabel, xlabel, title : str, optional
    logx : bool, default=True
        Logarithmic x axis.
    legend : bool, default=True
        Draw a legend inside the panel (placed by matplotlib where it covers the least data).
    dodge : float, default=0.025
        Horizontal offset between groups (a factor ``exp(dodge)`` per group on a log axis, a share
        of the x range otherwise) so that error bars at the same x stay visible; 0 disables it.
    figsize : (float, float), default=(6, 4)
    dpi : int, default=150

    Returns
    -------
    matplotlib.figure.Figure or matplotlib.axes.Axes
        The new figure (``ax`` None) or the given ``ax``.
    """
    fig: Any = None
    if ax is None:
        fig = _new_figure(figsize)
        ax = fig.add_subplot(1, 1, 1)
    all_x = _plot_groups(ax, rows, metric, group=group, x=x, logx=logx, dodge=dodge)
    for j, (label, value) in enumerate(_references_for(reference, "non-private").items()):
        ax.axhline(value, linestyle="--", color=f"C{7 + j}" if j < 3 else "k", linewidth=1.2, label=label)
    _style_axes(ax, all_x, logx=logx, xlabel=xlabel, ylabel=ylabel if ylabel is not None else metric,
                title=title, legend=legend)
    if fig is not None:
        if path is not None:
            p = Path(path)
            p.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(p, dpi=dpi)
        return fig
    return ax


def plot_metrics_vs_epsilon(
    rows: Sequence[Row],
    metrics: Sequence[str],
    path: PathLike,
    *,
    group: str = "method",
    x: str = "epsilon",
    references: Mapping[str, float | Mapping[str, float]] | None = None,
    ylabels: Mapping[str, str] | None = None,
    titles: Mapping[str, str] | None = None,
    suptitle: str | None = None,
    logx: bool = True,
    dodge: float = 0.025,
    panel_size: tuple[float, float] = (5.0, 3.8),
    dpi: int = 150,
) -> Path:
    """Several :func:`plot_metric_vs_epsilon` panels side by side with one legend below them.

    Parameters
    ----------
    rows : sequence of mappings
        Runs.
    metrics : sequence of str
        One panel per metric, left to right.
    path : str or Path
        PNG destination; parent folders are created.
    group, x, logx, dodge, dpi
        As in :func:`plot_metric_vs_epsilon`.
    references : mapping of metric -> float or mapping of label -> float, optional
        Dashed reference lines per panel (e.g. the non-private ceiling).
    ylabels, titles : mapping of metric -> str, optional
    suptitle : str, optional
        Figure title.
    panel_size : (float, float), default=(5, 3.8)
        Size of one panel in inches.

    Returns
    -------
    Path
        The PNG written.
    """
    if not metrics:
        raise ValueError("The 'metrics' parameter of plot_metrics_vs_epsilon must name at least one metric.")
    refs = references or {}
    fig = _new_figure((panel_size[0] * len(metrics), panel_size[1] + 0.6))
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        plot_metric_vs_epsilon(
            rows, metric, ax=ax, group=group, x=x, reference=refs.get(metric),
            ylabel=(ylabels or {}).get(metric), title=(titles or {}).get(metric), logx=logx, legend=False,
            dodge=dodge,
        )
    # One legend for all panels, outside the axes so that it never hides data.
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside lower center",
                   ncols=min(len(handles), 4), fontsize="small", frameon=False)
    if suptitle:
        fig.suptitle(suptitle)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=dpi)
    return p
