"""Peer benchmark: dpspectral's private PCA against IBM diffprivlib and OpenDP.

Usage (from anywhere; the peers' virtual environments are created under ~/.cache/dpspectral/peers):

    .venv/bin/python benchmarks/bench_peers.py --quick --out reports/bench-quick
    .venv/bin/python benchmarks/bench_peers.py --out reports/bench          # the full run (hours)
    .venv/bin/python benchmarks/bench_peers.py --help

A script of the source checkout, not a ``dpspectral`` subcommand: it installs the peers from the
package index into their own virtual environments and runs the worker scripts of
``benchmarks/peers/workers/``. See ``benchmarks/peers/bench.py`` for what is measured. MNIST and a9a
are read from ``--data DIR``, else ``$DPSPECTRAL_DATA``, else ``~/dpspectral_data``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from peers.bench import main

    sys.exit(main(sys.argv[1:]))
