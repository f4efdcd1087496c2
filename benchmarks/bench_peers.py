"""Peer benchmark of issue 8: dpspectral's private PCA against IBM diffprivlib and OpenDP.

Usage (from the project root):

    .venv/bin/python benchmarks/bench_peers.py --quick --out reports/bench-quick
    .venv/bin/python benchmarks/bench_peers.py --out reports/bench          # the full run (hours)

The same as ``dpspectral bench ...``; see ``benchmarks/peers/bench.py`` for what is measured.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __name__ == "__main__":
    os.environ.setdefault("DPSPECTRAL_BENCHMARKS", str(Path(__file__).resolve().parent))
    from dpspectral.cli import main

    sys.exit(main(["bench", *sys.argv[1:]]))
