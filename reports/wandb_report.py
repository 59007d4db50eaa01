"""``--publish-wandb``: a W&B Report with the dashboard's equivalent panels over the study's W&B runs.

W&B Reports (``wandb_workspaces.reports.v2``, the optional ``publish`` extra) need the online
service and a key even to build a report with run sets, so ``preflight`` checks mode, key, package
and that the server answers, each in well under a few seconds, and raises one ``UserError`` line
otherwise (W&B's own clients retry for minutes). This is the one module besides bench/training/tracking.py
that talks to W&B: the Report API lives in wandb-workspaces, not in the tracking path.
"""
from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlparse

from seqbench.bench.core.errors import UserError

if TYPE_CHECKING:  # preflight stays import-light so that a refusal is immediate
    import pandas as pd

    from seqbench.reports.table import StudyInfo

DEFAULT_BASE_URL = "https://api.wandb.ai"
CONNECT_TIMEOUT_S = 3.0
_NO = "--publish-wandb: "
_HTML_OK = "; the HTML report needs none of this (drop --publish-wandb)"


def preflight(env: Mapping[str, str] | None = None) -> None:
    """Fail fast, before any work, when a W&B Report cannot be published from here."""
    env = os.environ if env is None else env
    mode = env.get("WANDB_MODE", "").strip().lower()
    if mode in ("offline", "disabled", "dryrun"):
        raise UserError(f"{_NO}W&B is {mode} (WANDB_MODE={mode}); a W&B Report needs the online service: "
                        f"unset WANDB_MODE and set WANDB_API_KEY{_HTML_OK}")
    if not env.get("WANDB_API_KEY", "").strip():
        raise UserError(f"{_NO}no WANDB_API_KEY in the environment; a W&B Report needs an API key{_HTML_OK}")
    try:
        import wandb_workspaces.reports.v2  # noqa: F401
    except ImportError:
        raise UserError(f"{_NO}needs the publish extra: pip install 'seqbench[publish]' "
                        f"(wandb-workspaces){_HTML_OK}") from None
    base = env.get("WANDB_BASE_URL") or DEFAULT_BASE_URL
    url = urlparse(base)
    host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    if not host:
        raise UserError(f"{_NO}WANDB_BASE_URL={base!r} is not a URL like https://api.wandb.ai")
    try:
        socket.setdefaulttimeout(CONNECT_TIMEOUT_S)  # getaddrinfo has no timeout argument of its own
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        raise UserError(f"{_NO}cannot reach the W&B server {base} ({type(e).__name__}: {e}); "
                        f"publish when online{_HTML_OK}") from None
    finally:
        socket.setdefaulttimeout(None)


def _project(info: "StudyInfo") -> str:
    base = info.spec.get("base") or {}
    return ((base.get("tracking") or {}).get("project")) or "seqbench"


def publish(info: "StudyInfo", df: "pd.DataFrame", env: Mapping[str, str] | None = None) -> str:
    """Build and save the W&B Report for ``info``'s study; returns its URL."""
    import wandb_workspaces.reports.v2 as wr

    from seqbench.reports import figures as F

    env = os.environ if env is None else env
    entity = env.get("WANDB_ENTITY") or None
    project = _project(info)
    obj = info.objectives[0]
    params = F.swept(df)
    runset = wr.Runset(entity=entity or "", project=project, name=info.name,
                       filters=f"Metric('Group') == '{info.name}'")
    panels: list[Any] = [wr.LinePlot(title=f"{m} vs step", x="Step", y=[m]) for m in
                         dict.fromkeys([obj.name, "train/loss"])]
    panels += [wr.ScatterPlot(title=f"{obj.name} vs {F.label(p)}", x=wr.Config(F.label(p)),
                              y=wr.SummaryMetric(obj.name)) for p in params]
    if params:
        panels.append(wr.ParallelCoordinatesPlot(
            columns=[wr.ParallelCoordinatesPlotColumn(metric=wr.Config(F.label(p))) for p in params]
            + [wr.ParallelCoordinatesPlotColumn(metric=wr.SummaryMetric(obj.name))]))
        panels.append(wr.ParameterImportancePlot(with_respect_to=obj.name))
    summary = F.summary_table(df, obj)
    lines = [f"| {r['factor']} | {r['level']} | {F.fmt_ci(r['best mean'], r['best lo'], r['best hi'], r['seeds'])} | {r['diverged']} |"
             for r in summary.to_dict("records")]
    md = "\n".join(["| factor | level | best mean [95% CI] n | diverged |", "|---|---|---|---|", *lines])
    report = wr.Report(entity=entity or "", project=project, title=f"seqbench: {info.name}",
                       description=info.question or "",
                       blocks=[wr.H1(info.question or info.name),
                               wr.MarkdownBlock(text=f"Objective **{obj.name}** ({obj.goal}); "
                                                f"runs are W&B group `{info.name}`.\n\n{md}"),
                               wr.PanelGrid(runsets=[runset], panels=panels)])
    report.save()
    return str(report.url)
