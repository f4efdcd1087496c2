"""
One budget over several fits
============================

Every private fit spends privacy. When several analyses read the same private rows, their costs add
up (they *compose*), and what matters to the people in the data is the total. An
:class:`~dpspectral.Accountant` is that total: a ceiling ``(epsilon, delta)`` and a ledger of every
release charged to it. Several estimators share it by reference; a fit that would take the total past
the ceiling is refused with :class:`~dpspectral.BudgetExceededError` **before** any noise is drawn or
any row is read, and nothing is charged for it.

**What is private.** The rows of scikit-learn's digits, under ``replace_one`` neighbours; the ceiling
is ``(2, 1e-5)``. The figure shows the ledger: the epsilon spent after each release, the ceiling,
and the fit that was refused.
"""

# %%
# One ledger, three estimators
# ----------------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_digits

from dpspectral import (
    DPPCA,
    Accountant,
    BudgetExceededError,
    DPLinearDiscriminantAnalysis,
    UnresolvedVarianceWarning,
)

# This example uses only the ledger; the warning that some released variances are within the noise
# is not its topic.
warnings.filterwarnings("ignore", category=UnresolvedVarianceWarning)
X, y = load_digits(return_X_y=True)
X = X / 16.0  # a public, data-independent scale: the pixels are stored as 0..16

ledger = Accountant(epsilon=2.0, delta=1e-5)
pca5 = DPPCA(5, epsilon=0.3, delta=1e-6, row_norm=6.0, accountant=ledger, random_state=0).fit(X)
pca20 = DPPCA(20, epsilon=0.3, delta=1e-6, row_norm=6.0, accountant=ledger, random_state=1).fit(X)
lda = DPLinearDiscriminantAnalysis(epsilon=0.5, delta=1e-6, row_norm=6.0, classes=list(range(10)),
                                   accountant=ledger, random_state=2).fit(X, y)
print("spent (epsilon, delta):", ledger.spent())

# %%
# The ledger records each release: a label, the ``dp_accounting`` event charged and the total epsilon
# after it (at the ceiling's delta). A fit can make several releases (the private mean, a histogram
# of the row norms for the clipping bound, then the covariance): each is an entry.
for entry in ledger.entries:
    event = type(entry.event).__name__
    print(f"{entry.label:28s} {event:22s} total epsilon after: {entry.epsilon_after:.3f}")

# %%
# Clones share the ledger
# -----------------------
# ``sklearn.base.clone`` (what ``GridSearchCV`` and ``cross_val_score`` use) keeps the same
# accountant, so every fit they make is charged to it.
print("the clone charges the same ledger:", clone(pca5).accountant is ledger)

# %%
# Spending until the budget is exhausted
# --------------------------------------
# Fit more PCAs, now at ``epsilon = 0.5`` each, until the ledger refuses one. The totals grow more
# slowly than the sum of the fits' epsilons: the accountant composes the Gaussian releases exactly
# (in Renyi or privacy-loss-distribution terms), not by adding epsilons. The refusal happens before
# the fit reads the data or draws noise, so the amount spent is the same before and after it.
history = [(e.label, e.epsilon_after) for e in ledger.entries]
refused_at = None
for seed in range(3, 100):
    before = ledger.epsilon_spent()
    try:
        clone(pca5).set_params(epsilon=0.5, random_state=seed).fit(X)
    except BudgetExceededError as error:
        print("refused:", error)
        print(f"spent before the refused fit: {before:.4f}, after: {ledger.epsilon_spent():.4f}")
        refused_at = len(ledger.entries)
        break
    history.extend((e.label, e.epsilon_after) for e in ledger.entries[len(history):])
print("remaining epsilon:", round(ledger.remaining_epsilon(), 4))

# %%
# The figure: the ledger's running total after each release (one dot each, coloured by the
# estimator that made it), the ceiling, and the fit that was refused (the cross: it would have
# crossed the ceiling, so it was never run).
labels = sorted({label for label, _ in history})
colours = dict(zip(labels, plt.cm.tab10.colors, strict=False))  # 10 colours, fewer labels
fig, ax = plt.subplots(figsize=(6.5, 4))
steps = np.arange(1, len(history) + 1)
totals = [total for _, total in history]
ax.step(steps, totals, where="post", color="0.6", lw=1)
for label in labels:
    idx = [i for i, (lab, _) in enumerate(history) if lab == label]
    ax.plot(steps[idx], np.array(totals)[idx], "o", color=colours[label], label=label)
ax.axhline(2.0, color="k", ls="--",
           label="ceiling (epsilon = 2 at delta = 1e-5)")
if refused_at is not None:
    ax.plot(refused_at + 1, totals[-1], "x", color="red", ms=10, mew=2, label="refused: nothing charged")
ax.set_xlabel("release number")
ax.set_ylabel("total epsilon spent (delta = 1e-5)")
ax.set_title("One Accountant shared by every fit")
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
plt.show()
