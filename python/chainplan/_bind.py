"""The only importer of the gopy extension ``chainplan._gocore``.

Go errors arrive as ``RuntimeError`` with a stable code prefix (see pybind/doc.go); this
module re-raises them as chainplan's own exception classes, ``from`` the original.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from chainplan import _highs
from chainplan.errors import (
    ChainplanError,
    InfeasibleBudget,
    MissingSolverError,
    NotFoundError,
    PlanError,
    QueryError,
    ScheduleError,
    SchemaError,
)

__all__: list[str] = []

_T = TypeVar("_T")
_CODE = re.compile(r"^chainplan\[([a-z-]+)(?:;min_budget_bytes=(\d+))?\]: (.*)$", re.S)
_module: ModuleType | None = None
_highs_passed: tuple[str, str] | None = None  # what UseHighs was last given


def _go() -> ModuleType:
    """Import the extension on first use, with a clear error when it was not built."""
    global _module
    if _module is None:
        try:
            from chainplan._gocore import pybind
        except ImportError as e:
            raise ChainplanError(
                "chainplan's Go core is missing from this installation: reinstall it "
                "(`pip install --force-reinstall chainplan`; a source checkout builds it with "
                "`pip install -e .`, which needs the Go toolchain)") from e
        _module = pybind
    return _module


def translate(err: BaseException) -> Exception:
    """Map a coded Go error message to the matching chainplan exception."""
    m = _CODE.match(str(err))
    if m is None:
        return ChainplanError(str(err))
    code, min_budget, msg = m.group(1), m.group(2), m.group(3)
    if code == "infeasible":
        return InfeasibleBudget(msg, min_budget_bytes=int(min_budget or 0))
    cls: type[Exception] = {
        "invalid-chain": SchemaError,
        "invalid-profile": SchemaError,
        "invalid-plan": ScheduleError,
        "bad-request": PlanError,
        "bad-query": QueryError,
        "not-found": NotFoundError,
        "no-solver": MissingSolverError,
    }.get(code, ChainplanError)
    return cls(msg)


def call(fn: Callable[..., _T], *args: Any) -> _T:
    """Call a Go function, translating its errors."""
    try:
        return fn(*args)
    except RuntimeError as e:
        raise translate(e) from e


def _envelope(source: dict[str, Any], request: dict[str, Any] | None = None) -> str:
    """The one argument of every family's entry: ``{"source", "request"}`` (pybind's
    ``call``). ``source`` is what :func:`chainplan.source.envelope` made of the user's
    source; Go resolves it (``service.Resolve``)."""
    return json.dumps({"source": source, "request": request or {}})


def database() -> dict[str, str]:
    """The database, in the one spelling every binding takes (in a source envelope, or as
    the document :func:`_db` sends): ``$CHAINPLAN_DB`` (a SQLite file, or a PostgreSQL
    store named by a ``postgres://`` or ``host=... dbname=...`` DSN) and the home folder
    as Python sees them now, for ``~/.chainplan/chainplan.db``. The rule is Go's
    (``service.DBPath``, the CLI's too), applied at each call: a Go runtime loaded into
    Python sees the environment of the moment it was loaded, and would miss later changes."""
    return {"db_env": os.environ.get("CHAINPLAN_DB", ""), "home": _home()}


def _db() -> str:
    """The database document every binding that reads or writes the store takes (the
    one spelling: :func:`database`, as JSON)."""
    return json.dumps(database())


def plan(source: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """Plan a checkpointing schedule in one crossing (``pybind.Plan``) of ``source`` (a
    stored run's plan is recorded). ``request`` holds the sizes as the user wrote them
    (``"budget": "2GB"`` or ``"min"``, ``"bandwidth": "12GB/s"``) and ``"algo": ""`` for
    the input's default.

    Returns ``{"plan", "algo", "plan_id", "run_id", "keep_logits", "input_shape",
    "chain_json"}`` (the ids, the shape and a file's chain only when there are some): the
    whole planned document, which Go has validated.
    """
    out: dict[str, Any] = json.loads(call(_go().Plan, _envelope(source, request)))
    return out


def min_budget(source: dict[str, Any], request: dict[str, Any]) -> int:
    """The smallest feasible budget (bytes) of ``source``'s chain for the request's
    algorithm."""
    return int(call(_go().MinBudget, _envelope(source, request)))


def chain(source: dict[str, Any]) -> str:
    """The ``chainplan.chain/v1`` JSON of ``source``'s chain, for reading it in Python;
    no entry takes it back (each reads its source itself)."""
    return str(call(_go().Chain, _envelope(source)))


def version() -> str:
    """The version the Go side was built as (``chainplan.Version``, version.go), which it
    records with every plan."""
    return str(_go().Version())


def algorithms() -> str:
    """The planner registry as JSON: one object per algorithm (see chainplan.algorithms)."""
    return str(call(_go().Algorithms))


def parse_bytes(text: str) -> int:
    """Read a byte size with the CLI's rule ("2GiB", "512MB", "1e9", "123456"; docs/CLI.md)."""
    return int(call(_go().ParseBytes, text))


def parse_bandwidth(text: str) -> float:
    """Read a bandwidth in bytes per second with the CLI's rule ("12GB/s", "1.2e10")."""
    return float(call(_go().ParseBandwidth, text))


def _home() -> str:
    home = os.path.expanduser("~")
    return "" if home == "~" else home


def data_dir() -> str:
    """The local folder of the files kept beside the database: the folder of a SQLite
    file, ``~/.chainplan`` for a PostgreSQL store (``service.DataDir``). A value of
    ``$CHAINPLAN_DB`` that is neither a DSN nor a path is refused
    (:class:`~chainplan.errors.PlanError`)."""
    return str(call(_go().DataDir, _db()))


def ingest(file_path: str) -> int:
    """Store a profile file in the database (created if needed); returns its run id."""
    doc = json.loads(call(_go().Ingest, _db(), file_path))
    return int(doc["run_id"])


def query(sql: str, params: list[Any]) -> bytes:
    """Run one read-only statement with ``params`` bound to its placeholders (sent as a
    JSON array); returns the result as Arrow IPC file bytes."""
    return base64.b64decode(call(_go().Query, _db(), sql, json.dumps(params)))


def plan_document(plan_id: int) -> dict[str, Any]:
    """Stored plan ``plan_id``: ``{"run_id": N, "plan": <its whole document>}``."""
    doc: dict[str, Any] = json.loads(call(_go().PlanDocument, _db(), plan_id))
    return doc


def record_execution(plan_id: int, execution: dict[str, Any]) -> int:
    """Store a measured execution of a plan; returns its id."""
    return int(call(_go().RecordExecution, _db(), plan_id, json.dumps(execution)))


def use_highs() -> None:
    """Pass the HiGHS program of this installation to the Go planners (chainplan._highs),
    when it changed since the last call: before every call that may plan a pipeline."""
    global _highs_passed
    chosen = _highs.resolve()
    if chosen != _highs_passed:
        call(_go().UseHighs, *chosen)
        _highs_passed = chosen


def pipeline(source: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """Plan a pipeline of ``source``'s chain (``pybind.Pipeline``; a stored run's plan is
    recorded): ``{"plan", "notes", "plan_id", "run_id", "reused", "layer_param_bytes"}``."""
    use_highs()
    out: dict[str, Any] = json.loads(call(_go().Pipeline, _envelope(source, request)))
    return out


def pipesim(source: dict[str, Any], request: dict[str, Any]) -> str:
    """Simulate a pipeline schedule on ``source``'s chain (a stored run's, or with a
    ``plan_id`` and a source of the database alone, a stored plan's on its run, recorded);
    returns ``{"simulation", ...}`` JSON."""
    return str(call(_go().Pipesim, _envelope(source, request)))


def run_cli(args: list[str]) -> int:
    """Run the ``chainplan`` command line in this process (pybind.RunCLI) with ``args``
    (the program name left out); it writes to the process's standard output and error and
    returns the exit status."""
    use_highs()
    return int(call(_go().RunCLI, json.dumps(args)))


def runs(**run_filter: str | int | bool) -> list[dict[str, Any]]:
    """The stored runs that the filter selects, newest first (keys: ``model_name``,
    ``model_signature``, ``dtype``, ``device``, ``torch_version``, ``loss_name``,
    ``call_signature``, ``saved_measured``, ``limit``; see pybind.Runs)."""
    out: list[dict[str, Any]] = json.loads(call(_go().Runs, _db(), json.dumps(run_filter)))
    return out


def run(run_id: int) -> dict[str, Any]:
    """One stored run: its provenance (``device``, ``dtype``, ``input_shape``, ...)."""
    out: dict[str, Any] = json.loads(call(_go().Run, _db(), run_id))
    return out


def record_bandwidth(run_id: int, bytes_per_s: float, device: str, method: str,
                     link: str = "host") -> float:
    """Store a bandwidth measured for a run over ``link`` (``"host"``: device-host copies,
    ``"intra"``: between devices of a node, ``"inter"``: between nodes)."""
    return float(call(_go().RecordBandwidth, _db(), run_id, link, bytes_per_s, device, method))


def latest_bandwidth(run_id: int) -> float:
    """The newest host-device bandwidth (bytes/s) recorded for a run, 0 when none is."""
    return float(call(_go().LatestBandwidth, _db(), run_id))


def frontier(source: dict[str, Any], request: dict[str, Any]) -> str:
    """The budget-versus-makespan frontier of ``source``'s chain (rotor or revolve), as
    JSON."""
    return str(call(_go().Frontier, _envelope(source, request)))


def stage_options(graph: dict[str, Any], points: int = 0) -> dict[str, Any]:
    """The operation-level options of one stage's graph (``pybind.StageOptions``,
    ``planner/stageopt``): ``{"options": [...], "notes": [...]}``."""
    out: dict[str, Any] = json.loads(str(call(_go().StageOptions, json.dumps(graph), points)))
    return out


def plot_frontier(source: dict[str, Any], options: dict[str, Any]) -> str:
    """The frontier picture of ``source``'s chain, as an SVG document
    (``pybind.PlotFrontier``)."""
    return str(call(_go().PlotFrontier, _envelope(source, options)))


def plot_timeline(source: dict[str, Any], plan: dict[str, Any],
                  measured_peak_bytes: int = 0) -> str:
    """The memory timeline of a plan on ``source``'s chain, as an SVG document."""
    return str(call(_go().PlotTimeline, _envelope(
        source, {"plan": plan, "measured_peak_bytes": measured_peak_bytes})))


def plan_trace(source: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    """A plan replayed on ``source``'s chain in exact bytes: ``{"peak", "steps"}``, each
    step an operation (``op``: its kind and stage) with the bytes it finds (``before``),
    needs while it runs (``during``) and leaves (``after``) (``pybind.PlanTrace``)."""
    return dict(json.loads(call(_go().PlanTrace, _envelope(source, {"plan": plan}))))


def plot_stored_timeline(plan_id: int) -> str:
    """The memory timeline of a stored plan, with its measured peak, as an SVG document."""
    return str(call(_go().PlotStoredTimeline, _db(), plan_id))


def plot_stored_pipeline(plan_id: int, periods: int) -> str:
    """A stored pipeline plan's Gantt chart (its device kind, each rank's measured peak)."""
    return str(call(_go().PlotStoredPipeline, _db(), plan_id, periods))


def plot_history(run_id: int, model: str) -> str:
    """Predicted against measured for the plans of run ``run_id`` (when positive) or of
    every run of ``model``, as an SVG document (``pybind.PlotHistory``)."""
    return str(call(_go().PlotHistory, _db(), run_id, model))


def plot_pipeline(plan_json: str, periods: int) -> str:
    """The Gantt chart of a pipeline plan, as an SVG document (``pybind.PlotPipeline``)."""
    return str(call(_go().PlotPipeline, plan_json, periods))


def _parallel(fn: Callable[..., str], source: dict[str, Any], cluster_text: str,
              request: dict[str, Any], batch: int, dtype_bytes: int, nominal_links: bool) -> str:
    return str(call(fn, json.dumps({"source": source, "request": request, "cluster": cluster_text,
                                    "batch": batch, "dtype_bytes": dtype_bytes,
                                    "nominal_links": nominal_links})))


def advise(source: dict[str, Any], cluster_text: str, request: dict[str, Any], *,
           batch: int = 0, dtype_bytes: int = 4, nominal_links: bool = False) -> str:
    """Rank parallel strategies (pybind.Advise) of ``source`` (a stored run's advice is
    recorded; a chain's needs the ``batch`` it was measured at; a stored run's measured
    link bandwidths replace the cluster's unless ``nominal_links``). Returns
    ``{"advice_id", "advice"}`` JSON."""
    return _parallel(_go().Advise, source, cluster_text, request, batch, dtype_bytes,
                     nominal_links)


def search3d(source: dict[str, Any], cluster_text: str, request: dict[str, Any], *,
             batch: int = 0, dtype_bytes: int = 4, nominal_links: bool = False) -> str:
    """AMP's 3-D search (pybind.Search3D); returns ``{"advice_id", "result"}`` JSON."""
    return _parallel(_go().Search3D, source, cluster_text, request, batch, dtype_bytes,
                     nominal_links)


def record_advice_measurement(advice_id: int, measurement: dict[str, Any], db: str = "") -> int:
    """Store a measured run of an advised candidate in ``db`` (a SQLite path or a
    PostgreSQL DSN; default: :func:`database`'s); returns its id."""
    doc = json.dumps({"db_env": db, "home": _home()}) if db else _db()
    return int(call(_go().RecordAdviceMeasurement, doc, advice_id,
                    json.dumps(measurement)))


def advice_accuracy(advice_id: int) -> str:
    """Predictions against recorded runs of a stored advice, as JSON."""
    return str(call(_go().AdviceAccuracy, _db(), advice_id))
