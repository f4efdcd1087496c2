"""Local-model protocols: what each user sends, what the server computes, and both on one machine."""

from ._gaussian import local_gaussian, local_gaussian_aggregate, local_gaussian_report
from ._lowrank import local_lrf_aggregate, local_lrf_report, local_lrf_setup, private_local_lrf

__all__ = [
    "local_gaussian",
    "local_gaussian_aggregate",
    "local_gaussian_report",
    "local_lrf_aggregate",
    "local_lrf_report",
    "local_lrf_setup",
    "private_local_lrf",
]


# The implementation modules are private; their old public paths keep working for one release.
from .._moved import register_moved_modules  # noqa: E402

register_moved_modules(
    __name__,
    {
        "gaussian": "_gaussian",
        "lowrank": "_lowrank",
    },
)
