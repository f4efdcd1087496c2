"""Peer benchmark: dpspectral's private PCA against IBM diffprivlib and OpenDP.

* :mod:`peers.runner` -- peer virtual environments, worker processes with a timeout, result parsing;
* :mod:`peers.bench` -- the benchmark (data, contenders, metrics, targets, report, plots);
* ``workers/`` -- the scripts run in the peers' environments (and in the project's, for dpspectral and
  scikit-learn), speaking the one-line protocol of ``workers/_protocol.py``.

Run it with ``python benchmarks/bench_peers.py [--quick] [--out DIR]`` (not a ``dpspectral`` subcommand).
This folder is not part of the installed package: the benchmark needs a source checkout (it reads the
shared data sets and creates virtual environments next to it).
"""
