"""Warnings about privacy parameters that are accepted but give a weak guarantee.

A valid ``(epsilon, delta)`` can still promise little: ``delta`` comparable to ``1/n`` allows a
mechanism that publishes a whole row with probability ``delta``, and ``epsilon`` lets one person's
data change the probability of any outcome by a factor up to ``exp(epsilon)``, above 20,000 past 10.
Such a request runs (it is the caller's choice), with a :class:`PrivacyParameterWarning`.

The check is made in one place, :func:`~dpspectral.privacy._accounting.certify_release`, through which
the privacy report of every mechanism and estimator is made; the warning changes nothing that is
charged or released. Its text quotes only public inputs (epsilon, delta, the relation and, where it is
public, the number of rows).

The rules:

* ``epsilon > WEAK_EPSILON`` (10): the guarantee is weak.
* ``delta > DELTA_LIMIT`` (1e-3), whatever the relation and whether or not ``n`` is known;
* where the number of rows ``n`` is public (every relation but ``add_remove``: under ``replace_one``
  neighbours all have the same n) and the mechanism knew it before the release (the single-machine PCA
  methods, on an input read before the charge: they pass it to the report through
  :attr:`~dpspectral.privacy._pipeline.Releaser.n_rows`), also ``delta >= 1/n``. Under ``add_remove``
  ``n`` is private and is never used for this check; there, and where ``n`` is not known before the
  release, only the fixed limit applies.
"""

from __future__ import annotations

import warnings

from ._budget import PrivacyBudget, Relation

__all__ = ["DELTA_LIMIT", "PrivacyParameterWarning", "WEAK_EPSILON", "check_privacy_parameters"]

#: Above this epsilon a :class:`PrivacyParameterWarning` says the guarantee is weak.
WEAK_EPSILON = 10.0
#: Above this delta a :class:`PrivacyParameterWarning` is raised whatever ``n`` is.
DELTA_LIMIT = 1e-3


class PrivacyParameterWarning(UserWarning):
    """A requested epsilon or delta that is accepted but gives a weak guarantee.

    Raised for epsilon above 10, delta above 1e-3, or delta at least 1/n where n is public.
    """


def check_privacy_parameters(
    budget: PrivacyBudget,
    relation: Relation,
    *,
    mechanism: str,
    n_rows: int | None = None,
    stacklevel: int = 2,
) -> list[str]:
    """Warn (:class:`PrivacyParameterWarning`) about a weak request; return the messages.

    ``n_rows`` is used only where the relation makes it public (not under ``add_remove``); pass None
    when it is not known before the release. Nothing else is read from the data.
    """
    messages: list[str] = []
    if budget.epsilon > WEAK_EPSILON:
        messages.append(
            f"{mechanism}: epsilon={budget.epsilon:g} is above {WEAK_EPSILON:g}; the guarantee is then "
            "weak (it bounds how much more likely any outcome is with one person's data by a factor "
            "of exp(epsilon)). It runs as asked."
        )
    n = n_rows if relation.n_is_public and n_rows else None
    if n is not None and budget.delta >= 1.0 / n and budget.delta <= DELTA_LIMIT:
        messages.append(
            f"{mechanism}: delta={budget.delta:g} is at least 1/n for the public n={n} rows "
            f"({relation.value} neighbours); a delta well below 1/n is recommended, since a mechanism "
            "may publish a whole row with probability delta. It runs as asked."
        )
    elif budget.delta > DELTA_LIMIT:
        messages.append(
            f"{mechanism}: delta={budget.delta:g} is above {DELTA_LIMIT:g}; a delta well below 1/n is "
            "recommended, since a mechanism may publish a whole row with probability delta. It runs "
            "as asked."
        )
    for message in messages:
        warnings.warn(message, PrivacyParameterWarning, stacklevel=stacklevel + 1)
    return messages
