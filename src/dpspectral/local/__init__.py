"""Local-model protocols: what each user sends, what the server computes, and both on one machine."""

from .gaussian import local_gaussian, local_gaussian_aggregate, local_gaussian_report
from .lowrank import local_lrf_aggregate, local_lrf_report, local_lrf_setup, private_local_lrf

__all__ = [
    "local_gaussian",
    "local_gaussian_aggregate",
    "local_gaussian_report",
    "local_lrf_aggregate",
    "local_lrf_report",
    "local_lrf_setup",
    "private_local_lrf",
]
