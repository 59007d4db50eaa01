"""What a run and a sweep leave behind, typed once: the writers (tracking, diagnostics, the sweep
runner) and the readers (resume, reports) use these definitions and functions, never string-built
file layouts of their own.

A run folder ``<out_dir>/runs/<run_id>/`` holds:

- ``config.yaml``       the resolved RunConfig (``bench.config``)
- ``metrics.csv``       one ``MetricsRow`` per validation
- ``results.json``      one ``Results``
- ``diagnostics.json``  typed in ``bench.core.diagnostics_format`` (with ``diagnostics.gradients=true``)
- ``checkpoints/last.ckpt``  the trained state at the last step (and every ``train.checkpoint_every``)
- ``evals/<n>.json``    one ``EvalRecord`` per ``seqbench eval`` of the trained run (n = 1, 2, ...)

Paths come from ``runs_path(out_dir)`` / ``run_path(out_dir, run_id)`` and the file names below; the
column names of the tidy tables read from these files (``param.``, ``final.`` ...) are defined here too.
An Optuna study stores ``StudyAttrs`` as study user attributes and ``TrialAttrs`` on each trial.
Every file is written with ``atomic_write`` (a reader never sees half a file). This module imports
only the standard library, so reading results (``seqbench report``) never loads torch.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, TypedDict, cast

from seqbench.bench.core.disk import disk_full, is_disk_full
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.lengths import LengthCurve

RUNS = "runs"  # <out_dir>/runs/<run_id>/
CONFIG = "config.yaml"
METRICS = "metrics.csv"
RESULTS = "results.json"
CHECKPOINT = Path("checkpoints") / "last.ckpt"
EVALS = "evals"


def runs_path(out_dir: Path | str) -> Path:
    """``<out_dir>/runs``: where every run folder lives."""
    return Path(out_dir) / RUNS


def run_path(out_dir: Path | str, run_id: str) -> Path:
    """``<out_dir>/runs/<run_id>``: one run's folder (its files: ``run_path(...) / CONFIG`` ...)."""
    return runs_path(out_dir) / run_id


# The tidy tables' column names (the report's run table and trials.csv, ``seqbench.load_runs``),
# defined once for the modules that build those tables and the ones that read them (claims, verify).
PARAM = "param."  # a swept key, as the trial stores it: param.model.name
CONFIG_KEY = "config."  # a resolved config field (load_runs): config.task.delay
FINAL = "final."  # results.json ``final``: final.val/acc, final.test@40/acc
BEST = "best."  # results.json ``best``
BASELINE = "baseline."  # results.json ``baseline`` (the memoryless baseline): baseline.val/acc
EVAL = "eval."  # `seqbench eval` records (evals/<n>.json), the latest per key: eval.test@400/acc
SKIPPED = "skipped"  # a study table's status for a seed a sweep's ladder did not train (sweeps/ladder.py)
# ... and for a seed not trained at a grid point because it solved the rung at another (ladder: skip_solved)
SOLVED_ELSEWHERE = "solved-elsewhere"
RUN_STATUSES = ("completed", "diverged")  # a study table's runs with a result: what a claim and a frontier read
RESULT_PARTS = ("final", "best", "baseline")  # the results.json mappings that become FINAL/BEST/BASELINE columns
OBJECTIVE = "objective:"  # the run's objective value: objective:val/acc
TRIAL_VALUE = "trial_value:"  # Optuna's value of the run's trial


class Status(str, Enum):
    """How a run ended (results.json ``status``): a string everywhere it is written or printed."""

    COMPLETED = "completed"
    DIVERGED = "diverged"  # the loss went non-finite or past train.diverge_loss: a result, not a failure
    INTERRUPTED = "interrupted"  # Ctrl-C or a signal: checkpointed, continued with resume=true
    PRUNED = "pruned"  # stopped early by a sweep's pruner
    NODE_DONE = "completed on this node"  # a multi-node run's other node (rank 0 elsewhere writes the files)

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return self.value.__format__(spec)


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file + rename, so a reader never sees half a file. The file gets the
    permissions a plain ``open`` would (0666 less the process's umask, which the kernel applies; mkstemp
    would make 0600, and reading the umask means setting it): results are meant to be shared."""
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _create_beside(path: Path) -> tuple[int, str]:
    """A new, empty temp file in ``path``'s folder, opened for writing with mode 0666 (less the umask)."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}")
        try:
            return os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp name beside {path}")


def check_keys(kind: type, d: Mapping[str, Any]) -> None:
    """A writer may only write the keys its definition declares (a new key is added there first)."""
    unknown = set(d) - set(kind.__annotations__)
    if unknown:
        home = kind.__module__.removeprefix("seqbench.").replace(".", "/") + ".py"
        raise ValueError(f"{kind.__name__}: undeclared keys {sorted(unknown)}; declare them in {home}")


def json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):  # numpy / torch scalars
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# -- results.json -------------------------------------------------------------------------------


class Results(TypedDict, total=False):
    """``results.json``: one run's outcome. Metric keys are ``<split>/<metric>`` (``val/acc``,
    ``test/loss``, ``test@<length>/acc``) plus ``time/train_s`` in ``final``."""

    # provenance (bench.training.tracking.RunTracker.provenance)
    run_id: str
    config_hash: str  # RunConfig.config_hash(): reports join replicates on it
    seed: int
    git_sha: str | None  # only in a git checkout of seqbench (bench.core.provenance)
    versions: dict[str, str]  # python and package versions, seqbench included
    argv: list[str]
    started: str  # local time, ISO 8601
    # outcome
    status: Status
    reason: str | None  # why a run did not complete ("loss is nan", "pruned at step 50")
    task: str
    model: str
    final: dict[str, float]  # last validation, test metrics and time/train_s
    best: dict[str, float]  # best value of each val/ metric over the run, in its declared direction
    baseline: dict[str, float]  # the task's memoryless baseline, as val/<metric>
    solved: bool
    primary_metric: str  # val/<the task's primary metric>
    primary_goal: str  # "min" or "max"
    steps: int
    wall_time_s: float
    train_time_s: float
    samples_per_s: float | None  # over training time (validation excluded), summed over resumed processes
    tokens_per_s: float  # batch_size * seq_len per step and process, over training time
    model_flops_per_token: float  # analytic forward+backward FLOPs per token (bench.training.flops); absent: uncounted
    model_flops_per_s: float  # achieved: model_flops_per_token * tokens_per_s
    mfu: float  # model_flops_per_s / the device's dense peak for the precision (GPU only)
    steady_tokens_per_s: float  # tokens/s after the process's first 20 steps (compile, autotuning); absent: too short
    steady_mfu: float  # MFU at steady_tokens_per_s (GPU only)
    n_params: int
    # where it trained, read during training (Lightning moves the module back to the CPU at teardown)
    device: str  # "cpu", "cuda:0", ...
    device_name: str  # torch.cuda.get_device_name(), or the CPU's name
    precision: str  # the trainer's precision, e.g. "32-true", "bf16-mixed"
    world_size: int
    num_nodes: int
    extras: dict[str, Any]  # task extras (a generated text sample ...)
    length_generalisation: LengthCurve  # the test metric per length (bench.core.lengths); only with eval.lengths
    config: dict[str, Any]  # the resolved RunConfig


def write_results(run_dir: Path, results: Results) -> Path:
    check_keys(Results, results)
    path = Path(run_dir) / RESULTS
    atomic_write(path, json.dumps(results, indent=2, default=json_default) + "\n")
    return path


@dataclass(frozen=True)
class RunResult:
    """A finished run as training returns it: its identity, how it ended, and results.json as written
    (``result.results["final"]``, or ``result.final``)."""

    run_id: str
    status: Status
    reason: str | None  # why it stopped, when not completed
    run_dir: Path  # <out_dir>/runs/<run_id>: config.yaml, metrics.csv, results.json
    results: Results  # results.json as written

    @classmethod
    def of(cls, run_dir: Path, results: Results) -> RunResult:
        return cls(results["run_id"], Status(results["status"]), results.get("reason"), Path(run_dir), results)

    @property
    def ok(self) -> bool:
        """The run trained to its end; a diverged run is a result too."""
        return self.status in (Status.COMPLETED, Status.DIVERGED)

    @property
    def final(self) -> dict[str, float]:
        return self.results.get("final", {})

    def __getitem__(self, key: str) -> Any:
        """``result["final"]``: ``results[key]`` untyped, from when ``seqbench.run`` returned the dict. The package
        itself no longer indexes (``cmd_run`` reads ``.results``); notebooks and older tests may: read
        ``.results`` instead."""
        return self.results[key]  # type: ignore[literal-required]


def read_results(run_dir: Path) -> Results | None:
    """The run's results, or None when it has not finished (or the file is unreadable)."""
    data = read_json(Path(run_dir) / RESULTS)
    return cast(Results, data) if isinstance(data, dict) else None  # written by write_results


# -- evals/<n>.json: ``seqbench eval`` of a trained run -------------------------------------------


class EvalRecord(TypedDict, total=False):
    """One evaluation of a trained run's checkpoint, with what was asked. The run's config (and its
    hash), metrics.csv and results.json are left as they were; readers (``load_runs``) show the
    metrics as ``eval.<key>`` columns, a later evaluation's value winning."""

    n: int  # the file's number: evaluations of a run in the order they were made
    created: str  # local time, ISO 8601
    split: str  # "test" or "val"
    lengths: list[int | None]  # sequence lengths asked (None: the training length)
    batches: int  # batches per length (eval.test_batches)
    step: int  # the checkpoint's global step (the run's last step unless it stopped between saves)
    metrics: dict[str, float]  # ``<split>/<metric>`` at the training length, ``<split>@<length>/<metric>``
    eval_s: float  # wall seconds of the evaluation (model loading included)
    length_generalisation: LengthCurve  # the test metric per length (bench.core.lengths); test split with eval.lengths
    argv: list[str]
    versions: dict[str, str]
    git_sha: str | None


def write_eval(run_dir: Path, record: EvalRecord) -> Path:
    """``<run_dir>/evals/<n>.json`` with the next free number (claimed with O_EXCL, so two
    evaluations at once never write the same file); sets ``record["n"]``."""
    folder = Path(run_dir) / EVALS
    folder.mkdir(exist_ok=True)
    n = 1 + max((int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()), default=0)
    while True:
        path = folder / f"{n}.json"
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            break
        except FileExistsError:
            n += 1
    record = {**record, "n": n}
    check_keys(EvalRecord, record)
    atomic_write(path, json.dumps(record, indent=2, default=json_default) + "\n")
    return path


def read_evals(run_dir: Path) -> list[EvalRecord]:
    """The run's evaluations, oldest first (an unreadable or still empty file is skipped)."""
    paths = sorted((p for p in (Path(run_dir) / EVALS).glob("*.json") if p.stem.isdigit()), key=lambda p: int(p.stem))
    return [cast(EvalRecord, d) for d in map(read_json, paths) if isinstance(d, dict)]  # written by write_eval


def eval_metrics(run_dir: Path) -> dict[str, float]:
    """The metrics of all the run's evaluations, a later evaluation of the same key winning."""
    out: dict[str, float] = {}
    for rec in read_evals(run_dir):
        out.update(rec.get("metrics") or {})
    return out


def find_run_dir(run: str | Path, out_dir: str | Path = "outputs") -> Path:
    """A run folder named by its path or by its id under ``<out_dir>/runs``; ValueError naming the
    known ids otherwise."""
    p = Path(run)
    for d in (p, Path(out_dir) / "runs" / str(run)):
        if (d / CONFIG).is_file():
            return d
    runs = Path(out_dir) / "runs"
    known = sorted(q.parent.name for q in runs.glob(f"*/{CONFIG}"))
    shown = ", ".join(known[-6:]) + (f" (+{len(known) - 6} older)" if len(known) > 6 else "")
    raise ValueError(
        f"no run {str(run)!r} (neither a run folder nor an id under {runs}); "
        + (f"known: {shown}" if known else f"{runs} holds no runs")
    )


# -- metrics.csv --------------------------------------------------------------------------------

# One row per validation: ``step`` (int), ``wall_s`` (seconds since the run started), ``lr``,
# ``train/loss`` (mean since the previous row) and the task's ``val/<metric>`` values.
MetricsRow = dict[str, float]


def write_metrics(run_dir: Path, rows: list[MetricsRow]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys)
    w.writeheader()
    w.writerows(rows)
    atomic_write(Path(run_dir) / METRICS, buf.getvalue())


def _number(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


def read_metrics(run_dir: Path) -> list[MetricsRow]:
    """The run's rows (empty when there are none); a cell that is empty or not a number is left out,
    and so is a row without a step."""
    try:
        with (Path(run_dir) / METRICS).open(newline="") as f:
            raw = list(csv.DictReader(f))
    except (OSError, csv.Error, UnicodeDecodeError):
        return []
    rows = []
    for r in raw:
        row = {k: x for k, v in r.items() if k is not None and v not in (None, "") and (x := _number(v)) is not None}
        if "step" in row and math.isfinite(row["step"]):
            row["step"] = int(row["step"])
            rows.append(row)
    return rows


# -- diagnostics.json: typed in bench/core/diagnostics_format.py (pydantic: the writer validates each record,
# the reader checks the format version), the one definition bench.training.diagnostics and reports share.

# -- Optuna study and trial attributes (sweeps.trial writes, reports read) -----------------------


class StudyAttrs(TypedDict, total=False):
    spec: dict[str, Any]  # the validated sweep spec
    spec_path: str
    question: str
    metrics: list[dict[str, str]]  # [{name, goal}] in objective order
    out_dir: str  # where the runs are (relative to where the sweep ran)
    seqbench_version: str | None
    git_sha: str | None


class TrialAttrs(TypedDict, total=False):
    run_ids: list[str]  # one per seed replicate started, in the order of ``seeds`` ("" for a seed not trained)
    skipped: list[int]  # seeds not trained: they failed an easier rung of the spec's ladder (sweeps/ladder.py)
    solved_elsewhere: list[int]  # seeds not trained: they solved the rung at another best_of point (skip_solved)
    solved_seeds: list[int]  # trained seeds whose run met the task's solved criterion
    unsolved_seeds: list[int]  # trained seeds whose run finished without (diverged included)
    seeds: list[int]  # in the order the trial trains them (sweeps/ladder.seed_order)
    per_seed: list[Any]  # objective per seed (a list per seed when multi-objective); None = diverged
    mean: Any  # float, or a list per objective
    std: Any
    n_diverged: int
    config_hash: str
    wall_s: float
    fail_reason: str  # FAIL
    prune_reason: str  # PRUNED
    retried: bool  # a FAIL whose configuration was queued again (dead worker, Ctrl-C)
    retry_of: int  # on the retry: the trial it redoes
    resume_run_ids: list[str]  # on the retry: runs to continue from their checkpoints
    worker: dict[str, Any]  # who runs it: host, boot (id), pid, started (process start time); sweeps.liveness


# -- the W&B group of a sweep's runs (the runner sets it, the published W&B Report filters on it) -------


def wandb_group(study: str, storage: str) -> str:
    """The W&B group of a sweep's runs: the study name and a short hash of where the study lives
    (a resolved journal path, or a database URL with its password redacted), so a study named
    ``demo`` in another output folder or database is another group."""
    key = storage
    if "://" not in storage or storage.startswith("journal://"):
        key = str(Path(storage.removeprefix("journal://")).expanduser().resolve())
    return f"{study}-{hashlib.sha256(key.encode()).hexdigest()[:6]}"


def check_study_attrs(attrs: Mapping[str, Any]) -> StudyAttrs:
    check_keys(StudyAttrs, attrs)
    return dict(attrs)  # type: ignore[return-value]


def check_trial_attrs(attrs: Mapping[str, Any]) -> TrialAttrs:
    check_keys(TrialAttrs, attrs)
    return dict(attrs)  # type: ignore[return-value]


_PROBE_BYTES = 64 * 1024  # a full disk (or a file-size limit) refuses this; an empty probe file would pass


def check_writable(out_dir: Path) -> None:
    """Fail before training if ``out_dir`` cannot take a run's files (unwritable, or a full disk)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".write-test-") as f:
            f.write(b"\0" * _PROBE_BYTES)
            f.flush()
    except OSError as e:
        if is_disk_full(e):
            raise disk_full("out_dir", out_dir, _PROBE_BYTES, e) from None
        raise UserError(f"out_dir: cannot write to {out_dir} ({e.strerror})") from None
