"""``--publish-wandb``: a W&B Report with the dashboard's equivalent panels over the study's W&B runs.

W&B Reports (``wandb_workspaces.reports.v2``, the optional ``publish`` extra) are saved through the
online service with a key, so ``preflight`` checks mode, key (``WANDB_API_KEY`` or the one
``wandb login`` saved in ``~/.netrc``), package and that the server answers, each in well under a
few seconds, and raises one ``UserError`` line otherwise (W&B's own clients retry for minutes).
``build`` makes the Report object without the network (tested offline): its run set is the
study's W&B group (``bench.core.artifacts.wandb_group``: study name + where it is stored), grouped
by ``config_hash`` so the seed replicates of a configuration are one line (mean, standard error),
and its line plots are against ``trainer/global_step``, the trainer step of metrics.csv. This is
the one module besides bench/training/tracking.py that talks to W&B: the Report API lives in
wandb-workspaces, not in the tracking path.
"""

from __future__ import annotations

import netrc
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from seqbench.bench.core.artifacts import wandb_group
from seqbench.bench.core.errors import UserError
from seqbench.reports import aggregate as A

if TYPE_CHECKING:  # preflight stays import-light so that a refusal is immediate
    import pandas as pd
    import wandb_workspaces.reports.v2 as wr

    from seqbench.reports.table import StudyInfo
    from seqbench.sweeps.table import Objective

DEFAULT_BASE_URL = "https://api.wandb.ai"
CONNECT_TIMEOUT_S = 3.0
_NO = "--publish-wandb: "
_HTML_OK = "; the HTML report needs none of this (drop --publish-wandb)"
STEP = "trainer/global_step"  # the x axis seqbench logs every metrics.csv row at (bench.training.tracking)
SEEDS_GROUP = "config.config_hash"  # one configuration = one hash; its seed replicates aggregate


def saved_key(host: str, env: Mapping[str, str]) -> bool:
    """Whether ``wandb login`` saved a key for ``host``: the netrc file W&B itself reads
    (``$NETRC``, else ``~/.netrc``, else ``~/_netrc``)."""
    paths = [Path(env["NETRC"])] if env.get("NETRC") else [Path("~/.netrc").expanduser(), Path("~/_netrc").expanduser()]
    for path in paths:
        if path.is_file():
            try:
                auth = netrc.netrc(str(path)).authenticators(host)
            except (netrc.NetrcParseError, OSError):
                return False
            return bool(auth and auth[2])
    return False


def preflight(env: Mapping[str, str] | None = None) -> None:
    """Fail fast, before any work, when a W&B Report cannot be published from here."""
    env = os.environ if env is None else env
    mode = env.get("WANDB_MODE", "").strip().lower()
    if mode in ("offline", "disabled", "dryrun"):
        raise UserError(
            f"{_NO}W&B is {mode} (WANDB_MODE={mode}); a W&B Report needs the online service: "
            f"unset WANDB_MODE (and run `wandb login` or set WANDB_API_KEY){_HTML_OK}"
        )
    base = env.get("WANDB_BASE_URL") or DEFAULT_BASE_URL
    url = urlparse(base)
    host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    if not host:
        raise UserError(f"{_NO}WANDB_BASE_URL={base!r} is not a URL like https://api.wandb.ai")
    if not env.get("WANDB_API_KEY", "").strip() and not saved_key(host, env):
        raise UserError(f"{_NO}no W&B API key: run `wandb login` or set WANDB_API_KEY{_HTML_OK}")
    try:
        import wandb_workspaces.reports.v2  # noqa: F401
    except ImportError:
        raise UserError(
            f"{_NO}needs the publish extra: pip install 'seqbench[publish]' (wandb-workspaces){_HTML_OK}"
        ) from None
    try:
        socket.setdefaulttimeout(CONNECT_TIMEOUT_S)  # getaddrinfo has no timeout argument of its own
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        raise UserError(
            f"{_NO}cannot reach the W&B server {base} ({type(e).__name__}: {e}); publish when online{_HTML_OK}"
        ) from None
    finally:
        socket.setdefaulttimeout(None)


def project_of(info: StudyInfo, env: Mapping[str, str]) -> str:
    """The W&B project the study's runs went to (as ``tracking.wandb_target`` chose it): the spec's
    ``tracking.project``, else ``WANDB_PROJECT``, else ``seqbench``."""
    base = info.spec.get("base") or {}
    return ((base.get("tracking") or {}).get("project")) or env.get("WANDB_PROJECT", "").strip() or "seqbench"


def build(info: StudyInfo, df: pd.DataFrame, entity: str | None, project: str) -> wr.Report:
    """The Report object (no network when ``entity`` is given; None: W&B's default entity, which
    the Report API looks up online)."""
    import wandb_workspaces.reports.v2 as wr  # here: an optional extra (seqbench[publish]), checked by preflight
    from wandb_workspaces import expr  # the same optional extra

    obj = info.objectives[0]
    params = A.swept(df)
    group = wandb_group(info.name, info.storage)
    where: dict[str, Any] = {"entity": entity} if entity else {}  # no entity: W&B's default, never an empty string
    runset = wr.Runset(
        **where, project=project, name=info.name, filters=[expr.Metric("Group") == group], groupby=[SEEDS_GROUP]
    )
    curves = dict.fromkeys([obj.name, "train/loss"])
    panels: list[Any] = [
        wr.LinePlot(
            title=f"{m} vs step (mean and standard error over seeds)",
            x=STEP,
            y=[m],
            title_x="step",
            groupby_aggfunc="mean",
            groupby_rangefunc="stderr",
        )
        for m in curves
    ]
    panels += [
        wr.ScatterPlot(title=f"{obj.name} vs {A.label(p)}", x=wr.Config(A.label(p)), y=wr.SummaryMetric(obj.name))
        for p in params
    ]
    if params:
        panels.append(
            wr.ParallelCoordinatesPlot(
                columns=[wr.ParallelCoordinatesPlotColumn(metric=wr.Config(A.label(p))) for p in params]
                + [wr.ParallelCoordinatesPlotColumn(metric=wr.SummaryMetric(obj.name))]
            )
        )
        panels.append(wr.ParameterImportancePlot(with_respect_to=obj.name))
    md = _summary_markdown(df, obj)
    report = wr.Report(
        **where,
        project=project,
        title=f"seqbench: {info.name}",
        description=info.question or "",
        blocks=[
            wr.H1(info.question or info.name),
            wr.MarkdownBlock(
                text=f"Objective **{obj.name}** ({obj.goal}); runs are W&B group "
                f"`{group}`, one line per configuration (its seeds aggregated)."
                f"\n\n{md}"
            ),
            wr.PanelGrid(runsets=[runset], panels=panels),
        ],
    )
    runset.entity = report.entity  # the run set reads the runs of the report's entity (default included)
    return report


def _summary_markdown(df: pd.DataFrame, obj: Objective) -> str:
    """The dashboard's best-per-level table (``reports.aggregate.summary_table``) as a markdown table."""
    cell = lambda r: A.fmt_ci(r["best mean"], r["best lo"], r["best hi"], r["seeds"], form=r["best form"])  # noqa: E731
    lines = [
        f"| {r['factor']} | {r['level']} | {cell(r)} | {r['diverged']} |"
        for r in A.summary_table(df, obj).to_dict("records")
    ]
    return "\n".join(["| factor | level | best mean [95% CI] n | diverged |", "|---|---|---|---|", *lines])


def publish(info: StudyInfo, df: pd.DataFrame, env: Mapping[str, str] | None = None) -> str:
    """Build and save the W&B Report for ``info``'s study; returns its URL."""
    env = os.environ if env is None else env
    report = build(info, df, env.get("WANDB_ENTITY", "").strip() or None, project_of(info, env))
    report.save()
    return str(report.url)
