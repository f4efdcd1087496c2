"""Local-model protocols: what each user sends, what the server computes, and both on one machine."""

from .gaussian import local_gaussian, local_gaussian_aggregate, local_gaussian_report

__all__ = ["local_gaussian", "local_gaussian_aggregate", "local_gaussian_report"]
