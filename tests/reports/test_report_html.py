"""The report folder (index.html, plotly.min.js, summary.md, trials.csv), the CLI and --publish-wandb."""

from __future__ import annotations

import re
import sys
import time
import types

import pandas as pd
import pytest

from seqbench.bench.core.errors import UserError
from seqbench.reports import wandb_report
from seqbench.reports.build import build_report
from tests.helpers import run_cli
from tests.report_support import demo_study, journal_storage


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("report") / "outputs"
    out_dir.mkdir()
    study = demo_study(journal_storage(out_dir / "optuna.journal"), out_dir)
    return build_report(study, "postgresql://user:***@db/optuna", out_dir / "reports" / "ld_demo", out_dir)


def test_folder_is_self_contained(report):
    files = {p.name for p in report.folder.iterdir()}
    assert files == {"index.html", "plotly.min.js", "summary.md", "trials.csv"}
    html = report.index.read_text()
    scripts = re.findall(r"<script[^>]*\bsrc=['\"]([^'\"]+)", html)
    assert scripts == ["plotly.min.js"]  # the only external file, relative: works from file://
    assert not re.search(r"(src|href)=['\"]https?://", html)
    assert "Plotly.newPlot" in html and html.count('class="plotly-graph-div"') >= 8
    assert (report.folder / "plotly.min.js").stat().st_size > 1_000_000


def test_header_counts_states_and_redacts(report):
    html = report.index.read_text()
    assert "How long a delay can each architecture bridge on the copy task?" in html
    assert "11 complete · 1 pruned · 2 fail · 1 running · 1 waiting  (total 16)" in html
    assert "postgresql://user:***@db/optuna" in html
    assert "val/acc (maximize)" in html and "seqbench 0.1.0 (abc1234)" in html
    assert "1 diverged" in html


def test_trials_csv_is_the_table_and_summary_md_has_the_tables(report):
    csv = pd.read_csv(report.folder / "trials.csv")
    assert len(csv) == len(report.table) and list(csv.columns) == list(report.table.columns)
    assert csv["objective:val/acc"].sum() == pytest.approx(report.table["objective:val/acc"].sum())
    md = (report.folder / "summary.md").read_text()
    assert "## Summary: val/acc (maximize): Best per level" in md
    # best LSTM: delay 5, warmup 100, seeds .96/.97 (an accuracy's interval stays <= 1)
    assert "| model.name | lstm | 0.965 [0.901, 1] n=2 | 0.007071 | 2 |" in md


def test_publish_preflight_fails_fast_with_one_line(monkeypatch, tmp_path):
    with pytest.raises(UserError, match=r"^--publish-wandb: W&B is offline"):
        wandb_report.preflight({"WANDB_MODE": "offline", "WANDB_API_KEY": "x" * 40})
    with pytest.raises(UserError, match=r"^--publish-wandb: no W&B API key: run `wandb login` or set WANDB_API_KEY"):
        wandb_report.preflight({"NETRC": str(tmp_path / "none")})
    # with a key and the package, an unreachable server is a fast one-line error, not a retry loop
    fake = types.ModuleType("wandb_workspaces.reports.v2")
    for name in ("wandb_workspaces", "wandb_workspaces.reports", "wandb_workspaces.reports.v2"):
        monkeypatch.setitem(sys.modules, name, fake)
    t0 = time.perf_counter()
    with pytest.raises(UserError, match=r"^--publish-wandb: cannot reach the W&B server http://127.0.0.1:9"):
        wandb_report.preflight({"WANDB_API_KEY": "x" * 40, "WANDB_BASE_URL": "http://127.0.0.1:9"})
    assert time.perf_counter() - t0 < wandb_report.CONNECT_TIMEOUT_S + 1


def test_cli_publish_wandb_offline_exits_2_fast(tmp_path):
    t0 = time.perf_counter()
    r = run_cli(
        "report",
        "anything",
        "--out-dir",
        str(tmp_path),
        "--publish-wandb",
        env={"WANDB_MODE": "offline", "WANDB_API_KEY": ""},
        timeout=120,
    )
    took = time.perf_counter() - t0
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --publish-wandb: W&B is offline"), r.stderr
    assert took < 60  # interpreter start + imports on a busy machine; W&B's own retries take minutes
    assert not (tmp_path / "reports").exists()  # failed before any work


def test_cli_end_to_end(tmp_path, capsys):
    from seqbench.bench.cli import main

    out_dir = tmp_path / "outputs"
    out_dir.mkdir()
    demo_study(journal_storage(out_dir / "optuna.journal"), out_dir, extra_states=False)
    assert main(["report", "ld_demo", "--out-dir", str(out_dir), "--color-by", "optim.warmup_steps"]) == 0
    assert "12 trials, 24 runs" in capsys.readouterr().out
    assert (out_dir / "reports" / "ld_demo" / "index.html").is_file()
    assert "by optim.warmup_steps" in (out_dir / "reports" / "ld_demo" / "index.html").read_text()
    for args, msg in (
        (["ld_demo", "--color-by", "model.d_model"], "--color-by: 'model.d_model' is not a swept key"),
        (["nope"], "no study named 'nope'"),
    ):
        assert main(["report", *args, "--out-dir", str(out_dir)]) == 2
        assert msg in capsys.readouterr().err
    assert main(["report", "ld_demo", "--out-dir", str(tmp_path / "empty")]) == 2
    assert "no study journal" in capsys.readouterr().err


def test_a_key_saved_by_wandb_login_counts(monkeypatch, tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1\n  login user\n  password " + "k" * 40 + "\n")
    netrc.chmod(0o600)
    fake = types.ModuleType("wandb_workspaces.reports.v2")
    for name in ("wandb_workspaces", "wandb_workspaces.reports", "wandb_workspaces.reports.v2"):
        monkeypatch.setitem(sys.modules, name, fake)
    # no WANDB_API_KEY: the netrc key for the server's host passes the key check (and the next one fails)
    with pytest.raises(UserError, match=r"cannot reach the W&B server"):
        wandb_report.preflight({"NETRC": str(netrc), "WANDB_BASE_URL": "http://127.0.0.1:9"})
    with pytest.raises(UserError, match=r"no W&B API key"):  # a key for another host does not count
        wandb_report.preflight({"NETRC": str(netrc), "WANDB_BASE_URL": "http://localhost:9"})


def test_wandb_report_builds_offline_with_the_study_group_step_axis_and_seeds_aggregated(report, monkeypatch):
    import wandb_workspaces.reports.v2 as wr
    from wandb_workspaces import expr

    from seqbench.bench.core.artifacts import wandb_group

    r = wandb_report.build(report.info, report.table, "my-team", "proj")
    grid = r.blocks[-1]
    runset = grid.runsets[0]
    assert (r.entity, r.project, runset.entity, runset.project) == ("my-team", "proj", "my-team", "proj")
    f = expr.expr_to_filters(runset.filters)  # what the saved report will send
    assert (f.key.section, f.key.name, f.op, f.value) == (
        "run",
        "group",
        "=",
        wandb_group("ld_demo", report.info.storage),
    )
    assert runset.groupby == ["config.config_hash"]  # one line per configuration: its seeds aggregated
    lines = [p for p in grid.panels if isinstance(p, wr.LinePlot)]
    assert [p.y for p in lines] == [["val/acc"], ["train/loss"]]
    assert {(p.x, p.groupby_aggfunc, p.groupby_rangefunc) for p in lines} == {("trainer/global_step", "mean", "stderr")}
    scatter = [p.x.name for p in grid.panels if isinstance(p, wr.ScatterPlot)]
    assert sorted(scatter) == ["model.name", "optim.warmup_steps", "task.delay"]
    assert any(isinstance(p, wr.ParameterImportancePlot) for p in grid.panels)

    # no entity given: W&B's default entity (what `wandb login` belongs to), never ""
    import wandb_workspaces.reports.v2.interface as wi

    monkeypatch.setattr(wi, "_get_api", lambda: types.SimpleNamespace(default_entity="me"))
    r = wandb_report.build(report.info, report.table, None, "proj")
    assert r.entity == r.blocks[-1].runsets[0].entity == "me"
    # the project the runs went to: the spec's tracking.project, else WANDB_PROJECT, else seqbench
    assert wandb_report.project_of(report.info, {"WANDB_PROJECT": "env-proj"}) == "env-proj"
    assert wandb_report.project_of(report.info, {}) == "seqbench"
