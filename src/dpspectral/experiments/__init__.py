"""Experiments: the demo (the main job, ``dpspectral demo``), the papers' reproductions and reports.

Modules
-------
demo
    Private PCA on scikit-learn's digits for every certified central method, over a grid of
    epsilons: :func:`~dpspectral.experiments.demo.run_demo`.
report
    Generic helpers shared by every experiment: tidy CSV/JSON of runs, summaries, Markdown and text
    tables, PNG plots against epsilon.
"""

from __future__ import annotations

__all__ = ["demo", "report"]
