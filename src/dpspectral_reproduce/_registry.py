"""What the command line needs to know about the reproductions, with no heavy import.

The names of the papers' reproductions (``dpspectral reproduce NAME``), the demo's public defaults, the
install hint of the ``reproduce`` extra and the user-error type of this layer. :mod:`dpspectral.cli`
reads this module (lazily, when it builds the ``demo`` and ``reproduce`` parsers); nothing here
imports :mod:`dpspectral.cli`, so the layers import one way only: CLI -> reproductions -> library.
"""

from __future__ import annotations

__all__ = ["DEFAULT_EPSILONS", "DEFAULT_ROW_NORM", "EXTRA_MODULES", "INSTALL_HINT", "PAPERS",
           "PAPER_TITLES", "REPRODUCE_EXPERIMENTS", "CLIError"]

#: Every paper's reproduction, in the order ``reproduce all`` runs and shows them.
PAPERS: tuple[str, ...] = ("shang2021", "liu2022", "upadhyay2018", "imtiaz2018", "chen2025")

#: The choices of ``dpspectral reproduce`` (every paper, then ``all``).
REPRODUCE_EXPERIMENTS: tuple[str, ...] = (*PAPERS, "all")

#: One line per paper, for the help texts.
PAPER_TITLES: dict[str, str] = {
    "shang2021": "Shang et al. (UAI 2021): Figure 1 and Table 3, private PCA on a9a and MNIST",
    "liu2022": "Liu, Kong, Jain, Oh (NeurIPS 2022): DP-PCA, error rates, Example 4.1, Figure 1, real data",
    "upadhyay2018": "Upadhyay (NeurIPS 2018): low-rank factorization, Appendix J Tables 3-11",
    "imtiaz2018": "Imtiaz and Sarwate (ICASSP 2018): distributed PCA (DPdisPCA), Figures 1 and 2",
    "chen2025": "Chen et al. (2025): private generalized eigenproblems, FDA + classifiers, Tables 2-3",
}

#: The modules the ``reproduce`` extra installs (``pip install 'dpspectral[reproduce]'``).
EXTRA_MODULES: tuple[str, ...] = ("matplotlib", "markdown_it")
INSTALL_HINT = "pip install 'dpspectral[reproduce]'"

#: The epsilon grid of the demo.
DEFAULT_EPSILONS: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0)

#: Public bound on the Euclidean norm of a digits row after scaling pixels to [0, 1]. Chosen a priori,
#: not from the data: a handwritten digit at 8 x 8 resolution is assumed to light up at most about
#: 36 of the 64 cells at full intensity, so ``sqrt(36) = 6`` (the largest possible norm of a
#: [0, 1]^64 vector, 8, would add noise for images that do not exist). Rows above it are clipped.
DEFAULT_ROW_NORM: float = 6.0


class CLIError(ValueError):
    """A user error on the command line of the reproductions (one line, exit status 2).

    A ``ValueError``, so :func:`dpspectral.cli.main` reports it like its own ``CLIError``.
    """
