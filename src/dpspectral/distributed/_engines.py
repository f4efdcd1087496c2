"""Engines: where the site steps of a distributed protocol run, and how their faults are observed.

An engine takes the sites' data handles, one public :class:`~dpspectral.distributed._site.SitePlan`, one
seed per site (a ``SeedSequence``, or ``"secure"``: the site draws from its own OS entropy) and a step
function (:func:`~dpspectral.distributed._site.site_step`), runs the
step once per site, and returns one :class:`SiteOutcome` per site: the payload when the site answered in
time, or why it did not. Engines never raise because of a site's fault; the protocol decides what to do.

:class:`InProcessEngine`
    Runs the sites one after the other in this process (tests, small data, debugging). A site whose step
    raises is reported as ``"failed"``; one whose step took longer than ``timeout`` seconds is reported as
    ``"timeout"`` and its payload discarded (a late answer, as an aggregator with a deadline would).
:class:`DaskEngine`
    Runs every site's step on a Dask worker (``dask.distributed``) of the caller's cluster (the client
    given, an address, or the active client; a ``LocalCluster`` only when there is none, closed after the
    run), connected before the ledger is charged (:meth:`Engine.session`), where the site's data lives:
    in-memory arrays are scattered to one worker each (round-robin over the workers, sorted by address), user
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
(:func:`~dpspectral.distributed._site.failure_reason`): the kind of problem for the library's own
data-independent errors, a generic text for any other exception (whose message may describe the site's
rows), never a timing. ``SiteFailurePolicy.timeout`` still decides which sites are late (a documented
timing caveat).
With a Dask collection or a caller's ``Future`` as a site, an exception raised while computing the data
travels through the Dask scheduler as Dask sends it; the library reports only the generic text.
"""

from __future__ import annotations

import ast
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._progress import progress
from ._site import SitePayload, SitePlan, SiteSeed, failure_reason

__all__ = ["DaskConnectionError", "DaskEngine", "DaskStartError", "Engine", "InProcessEngine", "SiteOutcome",
           "SiteRun", "SiteStatus", "StepFunction", "check_worker_processes_can_start"]

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
        Why the site is missing: a data-independent reason (:func:`~dpspectral.distributed._site.
        failure_reason`) or the fault observed. Never the text of an arbitrary exception.
    worker : str or None
        Where the step ran (a Dask worker address), when known.

    No timing is kept: how long a site took depends on its private rows.
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


@dataclass(frozen=True)
class SiteRun:
    """The arguments of one :meth:`Engine.run`, as one record: what every engine's ``_run_sites`` reads."""

    sites: Sequence[Any]
    step: StepFunction
    plan: SitePlan
    seeds: Sequence[SiteSeed]
    timeout: float | None = None
    show_progress: bool | None = None


class Engine:
    """Runs one step per site and reports every site's outcome.

    A subclass implements ``_run_sites(job)`` (``job`` a :class:`SiteRun`, the arguments of
    :meth:`run`), or overrides :meth:`run` itself.
    """

    name: str = "engine"

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
        """Run ``step`` once per site and report every site's outcome.

        Parameters
        ----------
        sites : sequence
            Each site's data (an array, or data already on a worker).
        step : callable
            ``step(data, plan, seed, site)``, the site's private step
            (:func:`~dpspectral.distributed.site_step`).
        plan : SitePlan
            The public plan every site follows.
        seeds : sequence of SiteSeed
            Each site's own noise seed (``"secure"``: each site's OS entropy).
        timeout : float or None, default=None
            Seconds a site may take before it is reported as timed out.
        show_progress : bool or None, default=None
            Progress bar over the sites.

        Returns
        -------
        list of SiteOutcome
            One outcome per site, in site order.
        """
        return self._run_sites(SiteRun(sites, step, plan, seeds, timeout, show_progress))

    def _run_sites(self, job: SiteRun) -> list[SiteOutcome]:
        """:meth:`run` on its arguments as one record: what each engine implements."""
        raise NotImplementedError(f"{type(self).__name__} implements neither run nor _run_sites.")

    @contextlib.contextmanager
    def session(self, n_sites: int = 1) -> Iterator[Any]:
        """Open what the runs inside the block need (a connection), before the ledger is charged.

        A failure to connect raises here, with nothing charged. This engine needs nothing.
        """
        yield None


class InProcessEngine(Engine):
    """Run the sites sequentially in this process (see the module docstring)."""

    name = "inprocess"

    def _run_sites(self, job: SiteRun) -> list[SiteOutcome]:
        """Run ``step`` once per site: one :class:`SiteOutcome` per site, in order (:meth:`Engine.run`)."""
        sites, timeout = job.sites, job.timeout
        outcomes = []
        for s in progress(range(len(sites)), total=len(sites), desc="DPdisPCA sites",
                          enabled=job.show_progress):
            t0 = time.perf_counter()
            try:
                data = _materialise(sites[s])
                payload = job.step(data, job.plan, job.seeds[s], s)
            except Exception as exc:  # a site's fault is reported (data-independently), never raised here
                outcomes.append(SiteOutcome(s, "failed", error=f"its step raised {failure_reason(exc)}"))
                continue
            if timeout is not None and time.perf_counter() - t0 > timeout:
                late = f"no answer within timeout={timeout:g} s"
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


class DaskConnectionError(TimeoutError):
    """No Dask scheduler (or no worker) answered in time. Raised before the ledger is charged."""


class DaskStartError(RuntimeError):
    """A ``LocalCluster``'s worker processes cannot be started from this program (raised before the
    ledger is charged; the message says what to change)."""


class DaskEngine(Engine):
    """Run every site's step on a ``dask.distributed`` worker (see the module docstring).

    Which cluster, in this order (never a second one beside the caller's):

    1. ``client``: this client (not closed afterwards);
    2. ``scheduler_address``: a client to that scheduler for the run (closed afterwards);
    3. the **active client** (``distributed.default_client()``: the last ``Client`` created with
       ``set_as_default=True``, the default, and not closed), used as it is (not closed afterwards);
    4. the address in Dask's configuration (``dask.config.get("scheduler-address")``, e.g. the
       ``DASK_SCHEDULER_ADDRESS`` environment variable);
    5. otherwise a ``LocalCluster`` started for the run and closed after it.

    The connection is opened by :meth:`session` before the ledger is charged, so an address that does not
    answer (:class:`DaskConnectionError`, naming the address), a cluster without workers or a
    ``LocalCluster`` whose worker processes cannot start (:class:`DaskStartError`: a script calling the fit
    outside ``if __name__ == "__main__":``, or a program read from standard input) fail with nothing
    charged.

    Parameters
    ----------
    client : distributed.Client, optional
        Use this client (not closed afterwards).
    scheduler_address : str, optional
        Connect to this scheduler (e.g. ``"tcp://10.0.0.5:8786"``, or ``cluster.scheduler_address`` of a
        ``dask-jobqueue`` / ``dask-kubernetes`` cluster) for the run; its workers must be able to import
        ``dpspectral``. Ignored when ``client`` is given.
    n_workers : int, optional
        Only when a ``LocalCluster`` is started (no client, no address, no active client): its workers
        (default: ``min(n_sites, cpu count, 8)``; one thread per worker, one process each).
    cluster_kwargs : dict, optional
        More ``LocalCluster`` keyword arguments (e.g. ``{"processes": False}`` for threads).
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
        self._open: dict[int, Any] = {}  # thread id -> the client of its session in progress (``session``)

    def __deepcopy__(self, memo: dict[int, Any]) -> DaskEngine:
        """A copy sharing the client (a connection is a handle: ``sklearn.clone`` must not copy it)."""
        return DaskEngine(self.client, scheduler_address=self.scheduler_address, n_workers=self.n_workers,
                          cluster_kwargs=dict(self.cluster_kwargs), connect_timeout=self.connect_timeout)

    @contextlib.contextmanager
    def session(self, n_sites: int = 1) -> Iterator[Any]:
        """Connect (see the class docstring) and hold the connection for the runs inside the block."""
        with self.connect(n_sites) as client:
            thread = threading.get_ident()
            previous = self._open.get(thread)
            self._open[thread] = client
            try:
                yield client
            finally:
                if previous is None:
                    self._open.pop(thread, None)
                else:
                    self._open[thread] = previous

    @contextlib.contextmanager
    def connect(self, n_sites: int = 1) -> Iterator[Any]:
        """Yield a client with at least one worker.

        The given one, one to an address, the active one, or a new ``LocalCluster``'s (closed
        afterwards). Raises :class:`DaskConnectionError` or :class:`DaskStartError`.
        """
        from distributed import Client

        address = self.scheduler_address
        if self.client is None and address is None and _active_client() is None:
            import dask

            address = dask.config.get("scheduler-address", None) or None
        with contextlib.ExitStack() as stack:
            if self.client is not None:
                client = self.client
            elif address is not None:
                client = stack.enter_context(_client_at(Client, str(address), self.connect_timeout))
            else:
                client = _active_client() or stack.enter_context(self._local_cluster(n_sites))
            _wait_for_a_worker(client, self.connect_timeout)
            yield client

    @contextlib.contextmanager
    def _local_cluster(self, n_sites: int) -> Iterator[Any]:
        """A ``LocalCluster`` for one run, and a client to it (both closed afterwards)."""
        from distributed import Client, LocalCluster

        n = self.n_workers or max(1, min(n_sites, os.cpu_count() or 1, 8))
        kwargs: dict[str, Any] = {"n_workers": n, "threads_per_worker": 1, "processes": True,
                                  "dashboard_address": ":0"}
        kwargs.update(self.cluster_kwargs)
        if kwargs.get("processes", True):
            check_worker_processes_can_start()
        try:
            cluster = LocalCluster(**kwargs)
        except Exception as exc:
            raise DaskStartError(
                f"DaskEngine could not start a LocalCluster ({type(exc).__name__}: {exc}). "
                f"{_START_ADVICE}") from exc
        with cluster, Client(cluster, set_as_default=False) as client:
            yield client

    def _run_sites(self, job: SiteRun) -> list[SiteOutcome]:
        """Run ``step`` once per site: one :class:`SiteOutcome` per site, in order (:meth:`Engine.run`)."""
        client = self._open.get(threading.get_ident())
        if client is not None:  # inside ``session``: the connection opened before the charge
            return self._run(client, job)
        with self.connect(len(job.sites)) as client:
            return self._run(client, job)

    def _run(self, client: Any, job: SiteRun) -> list[SiteOutcome]:
        sites, step, plan, seeds, timeout = job.sites, job.step, job.plan, job.seeds, job.timeout
        workers = sorted(client.scheduler_info()["workers"])
        token = uuid.uuid4().hex[:12]
        owned: list[Any] = []  # data futures this run holds (released at the end)
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
                                          error=f"no answer within timeout={timeout:g} s of dispatch")
        finally:
            # Release (never cancel) what this run holds: a Dask collection's block computed here may be
            # the very key of the caller's persisted array, which cancelling would destroy for them.
            for fut in [*tasks, *owned]:
                with contextlib.suppress(Exception):
                    fut.release()
        return [outcomes[s] for s in range(len(sites))]


_START_ADVICE = (
    "Dask starts each worker process by re-running this program's main module (multiprocessing "
    "'spawn'), which fails when the fit is called at the top level of a script (outside "
    "`if __name__ == \"__main__\":`) or when the program was read from standard input. Either put the "
    "code that fits under `if __name__ == \"__main__\":` in a script file, or start a cluster first and "
    "it will be used: `from distributed import Client; client = Client(processes=False)` (threads, no "
    "new process), `Client(\"tcp://host:8786\")` for a running scheduler, or "
    "`DaskEngine(scheduler_address=...)`. Nothing was charged."
)


def check_worker_processes_can_start() -> None:
    """Raise :class:`DaskStartError` when a ``LocalCluster`` started now could not start its worker
    processes: Dask spawns them by re-running the main module, which fails when the main program came
    from standard input (no file to re-run) or calls the fit from its top level without the
    ``if __name__ == "__main__":`` guard (the re-run would start a cluster again). Interactive sessions,
    notebooks, ``python -c`` and the ``fork`` start method are fine."""
    import multiprocessing.process
    import sys

    import dask

    if dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork":
        return
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None:  # interactive: the workers do not re-run the main module
        return
    by_name = getattr(getattr(main, "__spec__", None), "name", None) is not None  # python -m
    start_dir = getattr(multiprocessing.process, "ORIGINAL_DIR", None) or ""  # where spawn resolves it
    if not by_name and not os.path.isfile(os.path.join(start_dir, path)):
        raise DaskStartError(
            f"DaskEngine cannot start worker processes: the main program ({path}) was read from standard "
            f"input or no longer exists, so the worker processes cannot re-run it. {_START_ADVICE}")
    line = _unguarded_call_line(main, path)
    if line is not None:
        raise DaskStartError(
            f"DaskEngine cannot start worker processes: the fit is called at line {line} of {path} "
            f"outside `if __name__ == \"__main__\":`, so every worker process would run it again. "
            f"{_START_ADVICE}")


def _unguarded_call_line(main: Any, path: str) -> int | None:
    """The line of the main module's top-level code that is running now (it led to this call), when
    that line is not inside an ``if __name__ == "__main__":`` block; None otherwise (or unknown)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:  # the main module is not running its top-level code (it called us later)
        return None
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_guard(node.test) and node.body:
            if node.body[0].lineno <= line <= (node.body[-1].end_lineno or line):
                return None
    return line


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [isinstance(x, ast.Name) and x.id == "__name__" for x in sides]
    mains = [isinstance(x, ast.Constant) and x.value == "__main__" for x in sides]
    return (names[0] and mains[1]) or (names[1] and mains[0])


def _active_client() -> Any:
    """The caller's default ``distributed.Client`` (``distributed.default_client()``), if one is open."""
    try:
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):
        return None
    return None if client.status in ("closing", "closed") else client


@contextlib.contextmanager
def _client_at(client_class: Any, address: str, timeout: float) -> Iterator[Any]:
    """A client to the scheduler at ``address`` (closed afterwards), or :class:`DaskConnectionError`."""
    try:
        client = client_class(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise DaskConnectionError(
            f"DaskEngine: no Dask scheduler answered at {address!r} within {timeout:g} s "
            f"({type(exc).__name__}: {exc}). Check the address (for a dask-jobqueue or dask-kubernetes "
            "cluster: cluster.scheduler_address), that the scheduler is running and that this machine can "
            "reach its port; raise connect_timeout for a scheduler still starting. Nothing was charged."
        ) from exc
    with client:
        yield client


def _wait_for_a_worker(client: Any, timeout: float) -> None:
    """Wait until the client's scheduler has a worker, or :class:`DaskConnectionError` naming it."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        address = getattr(getattr(client, "scheduler", None), "address", None)
        raise DaskConnectionError(
            f"DaskEngine: the Dask scheduler at {address!r} has no worker after {timeout:g} s. Start or "
            "scale its workers (cluster.scale(n) for a dask-jobqueue or dask-kubernetes cluster), or raise "
            "connect_timeout. Nothing was charged.") from exc


def _wait_any(futures: list[Any], seconds: float) -> None:
    """Block until one of ``futures`` changes state or ``seconds`` pass (whatever the reason)."""
    from distributed import wait

    with contextlib.suppress(Exception):  # a timeout or a cancelled future: the caller re-reads statuses
        wait(futures, timeout=seconds, return_when="FIRST_COMPLETED")


def _collect(fut: Any, site: int) -> SiteOutcome | None:
    """The outcome of a settled task (fetching its payload now), or None while it is still pending.

    The reasons are data-independent (:func:`~dpspectral.distributed._site.failure_reason`)."""
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
