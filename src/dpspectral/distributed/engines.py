"""Engines: where the site steps of a distributed protocol run, and how their faults are observed.

An engine takes the sites' data handles, one public :class:`~dpspectral.distributed.site.SitePlan`, one
seed per site (a ``SeedSequence``, or ``"secure"``: the site draws from its own OS entropy) and a step
function (:func:`~dpspectral.distributed.site.site_step`), runs the
step once per site, and returns one :class:`SiteOutcome` per site: the payload when the site answered in
time, or why it did not. Engines never raise because of a site's fault; the protocol decides what to do.

:class:`InProcessEngine`
    Runs the sites one after the other in this process (tests, small data, debugging). A site whose step
    raises is reported as ``"failed"``; one whose step took longer than ``timeout`` seconds is reported as
    ``"timeout"`` and its payload discarded (a late answer, as an aggregator with a deadline would).
:class:`DaskEngine`
    Runs every site's step on a Dask worker (``dask.distributed``), where the site's data lives: in-memory
    arrays are scattered to one worker each (round-robin over the workers, sorted by address), user
    ``Future`` objects and Dask collections (e.g. the row blocks of a Dask array) stay where Dask keeps
    them (a site's step is pinned to the worker holding its scattered data or future, so the data never
    moves; a Dask collection's blocks are computed where Dask decides). Only the payloads travel back;
    each is fetched as soon as its site finishes, so a worker that dies later cannot take a finished
    site's answer with it. Statuses: ``"failed"`` (the step raised),
    ``"lost"`` (the site's worker died, taking the site's data or the running step with it),
    ``"timeout"`` (no answer ``timeout`` seconds after the sites were dispatched; the task is cancelled).
    Data held in a Dask graph (a Dask array) is recomputed elsewhere when its worker dies, so such a site
    usually survives a worker's death; scattered data cannot be recomputed.

What the aggregator learns about a failed site is its status and a data-independent reason
(:func:`~dpspectral.distributed.site.failure_reason`): the kind of problem for the library's own
data-independent errors, a generic text for any other exception (whose message may describe the site's
rows), never a timing. ``site_timeout`` still decides which sites are late (a documented timing caveat).
With a Dask collection or a caller's ``Future`` as a site, an exception raised while computing the data
travels through the Dask scheduler as Dask sends it; the library reports only the generic text.
"""

from __future__ import annotations

import abc
import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._progress import progress
from .site import SitePayload, SitePlan, SiteSeed, failure_reason

__all__ = ["DaskEngine", "Engine", "InProcessEngine", "SiteOutcome", "SiteStatus", "StepFunction"]

SiteStatus = Literal["ok", "failed", "timeout", "lost"]
StepFunction = Callable[[Any, SitePlan, SiteSeed, int], SitePayload]


@dataclass(frozen=True)
class SiteOutcome:
    """What became of one site's step.

    Attributes
    ----------
    site : int
    status : {"ok", "failed", "timeout", "lost"}
    payload : SitePayload or None
        The site's released quantities (``status == "ok"`` only).
    error : str or None
        Why the site is missing: a data-independent reason (:func:`~dpspectral.distributed.site.
        failure_reason`) or the fault observed. Never the text of an arbitrary exception.
    worker : str or None
        Where the step ran (a Dask worker address), when known.

    No timing is kept: how long a site took depends on its private rows (issue 23).
    """

    site: int
    status: SiteStatus
    payload: SitePayload | None = None
    error: str | None = None
    worker: str | None = None


def is_dask_collection(obj: Any) -> bool:
    """A Dask array, a ``Delayed`` or another Dask collection (without importing dask)."""
    return type(obj).__module__.startswith("dask.") and hasattr(obj, "__dask_graph__")


def is_dask_future(obj: Any) -> bool:
    """A ``distributed.Future`` (data already on a worker)."""
    return type(obj).__name__ == "Future" and type(obj).__module__.startswith("distributed")


class Engine(abc.ABC):
    """Runs one step per site and reports every site's outcome."""

    name: str = "engine"

    @abc.abstractmethod
    def run(
        self,
        sites: Sequence[Any],
        step: StepFunction,
        plan: SitePlan,
        seeds: Sequence[SiteSeed],
        *,
        timeout: float | None = None,
        show_progress: bool | None = None,
    ) -> list[SiteOutcome]:
        """One :class:`SiteOutcome` per site, in site order."""


class InProcessEngine(Engine):
    """Run the sites sequentially in this process (see the module docstring)."""

    name = "inprocess"

    def run(
        self,
        sites: Sequence[Any],
        step: StepFunction,
        plan: SitePlan,
        seeds: Sequence[SiteSeed],
        *,
        timeout: float | None = None,
        show_progress: bool | None = None,
    ) -> list[SiteOutcome]:
        outcomes = []
        for s in progress(range(len(sites)), total=len(sites), desc="DPdisPCA sites", enabled=show_progress):
            t0 = time.perf_counter()
            try:
                data = _materialise(sites[s])
                payload = step(data, plan, seeds[s], s)
            except Exception as exc:  # a site's fault is reported (data-independently), never raised here
                outcomes.append(SiteOutcome(s, "failed", error=f"its step raised {failure_reason(exc)}"))
                continue
            if timeout is not None and time.perf_counter() - t0 > timeout:
                late = f"no answer within site_timeout={timeout:g} s"
                outcomes.append(SiteOutcome(s, "timeout", error=late))
            else:
                outcomes.append(SiteOutcome(s, "ok", payload=payload))
        return outcomes


def _materialise(site: Any) -> Any:
    """A local copy of one site's data (only the in-process engine needs one)."""
    if is_dask_future(site):
        return site.result()
    if is_dask_collection(site):
        import dask

        (value,) = dask.compute(site, scheduler="sync")
        return value
    return site


def _run_site_on_worker(step: StepFunction, data: Any, plan: SitePlan, seed: SiteSeed,
                        site: int) -> tuple[SitePayload, str | None]:
    """The task a Dask worker runs for one site: the step, and the worker's address."""
    payload = step(data, plan, seed, site)
    try:
        from distributed import get_worker

        address: str | None = get_worker().address
    except (ImportError, ValueError):
        address = None
    return payload, address


class DaskEngine(Engine):
    """Run every site's step on a ``dask.distributed`` worker (see the module docstring).

    Parameters
    ----------
    client : distributed.Client, optional
        Use this client (not closed afterwards).
    scheduler_address : str, optional
        Connect to this scheduler (e.g. ``"tcp://10.0.0.5:8786"``) for the run; its workers must be able
        to import ``dpspectral``. Ignored when ``client`` is given.
    n_workers : int, optional
        Without ``client`` and ``scheduler_address``: the workers of the ``LocalCluster`` started for the
        run (default: ``min(n_sites, cpu count, 8)``; one thread per worker, one process each).
    cluster_kwargs : dict, optional
        More ``LocalCluster`` keyword arguments.
    connect_timeout : float, default=30
        Seconds to wait for the scheduler and for at least one worker.
    """

    name = "dask"

    def __init__(
        self,
        client: Any = None,
        *,
        scheduler_address: str | None = None,
        n_workers: int | None = None,
        cluster_kwargs: dict[str, Any] | None = None,
        connect_timeout: float = 30.0,
    ) -> None:
        self.client = client
        self.scheduler_address = scheduler_address
        self.n_workers = n_workers
        self.cluster_kwargs = dict(cluster_kwargs or {})
        self.connect_timeout = connect_timeout

    @contextlib.contextmanager
    def connect(self, n_sites: int = 1) -> Iterator[Any]:
        """A client for one run: the given one, one to ``scheduler_address``, or a new ``LocalCluster``."""
        from distributed import Client, LocalCluster

        if self.client is not None:
            yield self.client
            return
        if self.scheduler_address is not None:
            with Client(self.scheduler_address, timeout=self.connect_timeout, set_as_default=False) as client:
                yield client
            return
        n = self.n_workers or max(1, min(n_sites, os.cpu_count() or 1, 8))
        kwargs: dict[str, Any] = {"n_workers": n, "threads_per_worker": 1, "processes": True,
                                  "dashboard_address": ":0"}
        kwargs.update(self.cluster_kwargs)
        with LocalCluster(**kwargs) as cluster, Client(cluster, set_as_default=False) as client:
            yield client

    def run(
        self,
        sites: Sequence[Any],
        step: StepFunction,
        plan: SitePlan,
        seeds: Sequence[SiteSeed],
        *,
        timeout: float | None = None,
        show_progress: bool | None = None,
    ) -> list[SiteOutcome]:
        with self.connect(len(sites)) as client:
            return self._run(client, sites, step, plan, seeds, timeout)

    def _run(self, client: Any, sites: Sequence[Any], step: StepFunction, plan: SitePlan,
             seeds: Sequence[SiteSeed], timeout: float | None) -> list[SiteOutcome]:
        client.wait_for_workers(1, timeout=self.connect_timeout)
        workers = sorted(client.scheduler_info()["workers"])
        token = uuid.uuid4().hex[:12]
        owned: list[Any] = []  # data futures this run created (released at the end)
        tasks: dict[Any, int] = {}
        outcomes: dict[int, SiteOutcome] = {}
        try:
            for s, site in enumerate(sites):
                pin: list[str] | None = None
                if is_dask_future(site):
                    data = site
                    holders = client.who_has([site]).get(site.key)
                    pin = sorted(holders) or None if holders else None  # run where the data already is
                elif is_dask_collection(site):
                    data = client.compute(site)
                    owned.append(data)
                else:
                    pin = [workers[s % len(workers)]]
                    data = client.scatter(site, workers=pin, hash=False)
                    owned.append(data)
                fut = client.submit(_run_site_on_worker, step, data, plan, seeds[s], s,
                                    key=f"dpdispca-site-{s}-{token}", workers=pin, allow_other_workers=False,
                                    retries=0, pure=False)
                tasks[fut] = s
            t0 = time.perf_counter()
            deadline = None if timeout is None else t0 + timeout
            pending = dict(tasks)
            while pending:
                for fut, s in list(pending.items()):
                    done = _collect(fut, s)
                    if done is not None:
                        outcomes[s] = done
                        del pending[fut]
                if not pending:
                    break
                now = time.perf_counter()
                if deadline is not None and now >= deadline:
                    break
                wait_s = 0.5 if deadline is None else max(0.0, min(0.5, deadline - now))
                _wait_any(list(pending), wait_s)
            for fut, s in pending.items():
                fut.cancel()
                outcomes[s] = SiteOutcome(s, "timeout",
                                          error=f"no answer within site_timeout={timeout:g} s of dispatch")
        finally:
            for fut in list(tasks):
                with contextlib.suppress(Exception):
                    fut.release()
            if owned:
                with contextlib.suppress(Exception):
                    client.cancel(owned)
        return [outcomes[s] for s in range(len(sites))]


def _wait_any(futures: list[Any], seconds: float) -> None:
    """Block until one of ``futures`` changes state or ``seconds`` pass (whatever the reason)."""
    from distributed import wait

    with contextlib.suppress(Exception):  # a timeout or a cancelled future: the caller re-reads statuses
        wait(futures, timeout=seconds, return_when="FIRST_COMPLETED")


def _collect(fut: Any, site: int) -> SiteOutcome | None:
    """The outcome of a settled task (fetching its payload now), or None while it is still pending.

    The reasons are data-independent (:func:`~dpspectral.distributed.site.failure_reason`)."""
    status = fut.status
    if status == "finished":
        try:
            payload, worker = fut.result(timeout=60)
        except Exception:  # the result's worker died between the status check and the fetch
            return SiteOutcome(site, "lost", error="its answer was lost with its worker")
        return SiteOutcome(site, "ok", payload=payload, worker=worker)
    if status == "error":
        raised = fut.exception()
        if type(raised).__name__ == "KilledWorker":
            return SiteOutcome(site, "lost", error="its workers kept dying (KilledWorker)")
        return SiteOutcome(site, "failed", error=f"its step raised {failure_reason(raised)}")
    if status in ("cancelled", "lost"):
        return SiteOutcome(site, "lost",
                           error="its worker died, taking the site's data or its running step with it")
    return None
