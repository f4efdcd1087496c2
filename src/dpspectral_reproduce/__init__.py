"""The papers' reproductions, the demo and their report writer: the layer above the library.

Installed with the library (one distribution, two packages); its own dependencies, matplotlib and
markdown-it-py, come with the ``reproduce`` extra (``pip install 'dpspectral[reproduce]'``). The
``dpspectral`` command imports this package only for ``demo`` and ``reproduce``; nothing in
:mod:`dpspectral` imports it, and nothing here imports :mod:`dpspectral.cli`.

Modules
-------
demo
    Private PCA on scikit-learn's digits for every certified central method, over a grid of
    epsilons (the main job, ``dpspectral demo``): :func:`~dpspectral_reproduce.demo.run_demo`.
shang2021, liu2022, upadhyay2018 (+ upadhyay2018_tables), imtiaz2018, chen2025
    One paper's reproduction each (``dpspectral reproduce PAPER``): ``run_<paper>(out, ...)`` and the
    command's ``cli_run(args, out)``. Real data sets come from ``data_home`` / ``--data``, else
    ``$DPSPECTRAL_DATA``, else ``~/dpspectral_data`` (:func:`dpspectral.datasets.get_data_home`).
reproduce_all
    Every paper, then one HTML index (``dpspectral reproduce all``).
report
    Generic helpers shared by every experiment: tidy CSV/JSON of runs, summaries, Markdown and text
    tables, PNG plots against epsilon (matplotlib is imported only by the plotting functions).
papers, commands, _registry
    The command line of this layer: one argument parser per paper, the ``demo`` and ``reproduce``
    subcommands, and the names and defaults the parsers need (standard library only).

Privacy
-------
The experiments call the library's mechanisms; everything they write is a released value, a public
input or an evaluation metric that the reports mark as non-private.
"""

from __future__ import annotations

__all__ = ["demo", "report"]
