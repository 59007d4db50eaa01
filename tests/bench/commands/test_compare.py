"""`seqbench compare` end to end on tiny settings, `seqbench runs`, and `seqbench.load_runs`."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState

import seqbench
from seqbench.bench.cli import main
from seqbench.bench.commands.compare import build_spec, study_name
from seqbench.sweeps.spec import load_spec
from seqbench.sweeps.storage import open_storage
from seqbench.sweeps.study import grid_key as _key
from seqbench.sweeps.table import build_table
from tests.helpers import TINY_TASK

TINY = [f"task.{k}={v}" for k, v in TINY_TASK["copy"].items() if k != "delay"] + [
    "model.d_model=16",
    "train.max_steps=4",
    "train.val_every=2",
    "train.val_batches=1",
    "train.batch_size=4",
    "train.threads=1",
    "eval.test_batches=1",
    "tracking.wandb=off",
]
SETTINGS = ["model=rnn,gru", "task=copy", "task.delay=3,5", "seeds=2", *TINY]


def cli(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(list(args))
    return code, buf.getvalue()


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "outputs"
    code, text = cli("compare", *SETTINGS, "--out-dir", str(out))
    assert code == 0, text
    name = study_name(build_spec(SETTINGS)[0])
    return out, name, text


def _study(out: Path, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=open_storage(None, out))


def test_compare_runs_the_grid_prints_ranked_intervals_and_writes_the_dashboard(compared):
    out, name, text = compared
    study = _study(out, name)
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 4
    assert sorted(_key(t.params) for t in trials) == sorted(
        _key({"model.name": m, "task.delay": d}) for m in ("rnn", "gru") for d in (3, 5)
    )
    assert all(t.user_attrs["seeds"] == [0, 1] for t in trials)
    # the typed spec ran; its YAML, written beside the study, is the study's spec file (`seqbench sweep` continues it)
    assert study.user_attrs["spec_path"] == str(out / "specs" / f"{name}.yaml")
    assert f"study {name}: grid, 4 configurations x 2 seed(s), 0 done" in text
    ranked = text[text.index("ranked by val/acc (maximize)") :]
    rows = [ln.split() for ln in ranked.splitlines()[2:6]]
    # every row states its 2 seeds: an interval with n=2, or "on all 2 seeds" where they tied (never [x, x])
    assert [r[0] for r in rows] == ["1", "2", "3", "4"] and all(
        "n=2" in " ".join(r) or "on all 2 seeds" in " ".join(r) for r in rows
    )
    means = [study.trials[int(r[1])].value for r in rows]
    assert means == sorted(means, reverse=True)
    assert "paired comparisons (same seeds; better level first):" in text
    pair = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip().startswith(("gru vs rnn at task.delay=3", "rnn vs gru at task.delay=3"))
    ]
    assert len(pair) == 1, text
    # val/acc is bounded: judged per seed as verify judges it, and 2 seeds cannot decide a sign test at 5%
    assert " ahead on " in pair[0] or "the same val/acc on each of 2 seeds" in pair[0] or "n=1" in pair[0], pair
    assert "d=" not in pair[0] and "paired t" not in pair[0], pair
    assert any(x in pair[0] for x in ("decide at 5%", "nothing to test", "no test")), pair
    index = out / "reports" / name / "index.html"
    assert index.is_file() and f"dashboard: {index}" in text
    # one ranked table, no hint to build the dashboard it already wrote, the answer above the table
    assert "best configurations:" not in text and "seqbench report" not in text
    assert any(ln.startswith(("Best", "No configuration beats")) for ln in text[: text.index("ranked by")].splitlines())
    assert "## Paired comparisons: val/acc" in (index.parent / "summary.md").read_text()


def test_every_trial_reports_its_curve_without_a_pruner(compared):
    out, name, _ = compared
    for t in _study(out, name).get_trials():
        # seed 0 at steps 2 and 4, seed 1 offset by max_steps: optuna-dashboard draws these live
        assert sorted(t.intermediate_values) == [2, 4, 6, 8]


def test_rerun_in_another_order_runs_nothing_new(compared):
    out, name, _ = compared
    before = sorted(p.name for p in (out / "runs").iterdir())
    reordered = [SETTINGS[2], *SETTINGS[3:], SETTINGS[1], SETTINGS[0]]
    code, text = cli("compare", *reordered, "--out-dir", str(out))
    assert code == 0 and f"study {name}: grid, 4 configurations x 2 seed(s), 4 done" in text
    assert "COMPLETE  val/acc" not in text  # no trial line: nothing ran
    assert sorted(p.name for p in (out / "runs").iterdir()) == before
    assert len(_study(out, name).get_trials()) == 4


def test_print_spec_loads_as_the_same_study(compared, tmp_path):
    out, name, _ = compared
    code, text = cli("compare", *SETTINGS, "--print-spec")
    assert code == 0 and f"--study {name}" in text.splitlines()[0]
    path = tmp_path / "grown.yaml"
    path.write_text(text)
    spec = load_spec(path)
    assert study_name(spec.to_dict()) == name
    assert [_key(p) for p in spec.grid()] == [_key(t.params) for t in _study(out, name).get_trials()]
    assert spec.metrics()[0].name == "val/acc" and spec.metrics()[0].goal == "maximize" and spec.seeds == [0, 1]
    before = len(list((out / "runs").iterdir()))
    code, text = cli("sweep", str(path), "--study", name, "--out-dir", str(out))
    assert code == 0 and "4 done" in text and len(list((out / "runs").iterdir())) == before


def test_metric_option_takes_the_declared_goal():
    raw, _ = build_spec(SETTINGS, metric="val/loss")
    assert raw["metric"] == {"name": "val/loss", "goal": "minimize"}
    assert study_name(raw) != study_name(build_spec(SETTINGS)[0])


def test_fields_of_one_model_are_routed_or_refused(capsys):
    raw, notes = build_spec(["model=lstm,gru", "model.forget_bias=2.0", *TINY])
    assert raw["per_model"] == {"lstm": {"model.forget_bias": 2.0}} and "forget_bias" not in raw["base"]["model"]
    assert notes == ["note: model.forget_bias=2.0 applies to lstm only (per_model; no such field in gru)"]
    for args, msg in [
        (["model=lstm,gru", "model.forget_bias=0,1"], "error: model.forget_bias: only lstm of the compared models"),
        (["model=lstm,gru", "model.n_heads=1"], "error: model.n_heads: none of the compared models (lstm, gru)"),
        (["model=lstm,gru", "model.forgt_bias=1"], "error: model.forgt_bias: unknown field; allowed: d_model"),
        (["model=lstm", "task.delay=3"], "error: compare: nothing to compare; give at least one comma list"),
        (["model=lstm,gru", "seed=1"], "error: seed: set by compare; compare runs every setting on seeds=N"),
        (["model=lstm,lstm"], "error: model.name: a value repeats"),
        (["model=lstm,gru", "seeds=0,x"], "error: seeds: give a count"),
        (["model=lstm,gru", "--metric", "val/bleu"], "error: compare: metric.name: 'val/bleu' is not reported"),
    ]:
        assert main(["compare", *args, "--print-spec"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(msg) and err.count("\n") == 1, err


# -- finding runs again ----------------------------------------------------------------------------


def test_load_runs_is_the_reports_table(compared):
    out, name, _ = compared
    runs = seqbench.load_runs(out)
    table = build_table(_study(out, name), out / "runs").set_index("run_id")
    assert set(runs["run_id"]) == set(table.index) and len(runs) == 8
    mine = runs.set_index("run_id").loc[table.index]
    # config_hash: the run's own there (it includes the seed), the trial's first seed's here
    shared = [c for c in mine.columns if c in table.columns and c != "config_hash"]
    assert {
        "status",
        "diverged",
        "final.val/acc",
        "best.val/acc",
        "baseline.val/acc",
        "steps",
        "seed",
        "task",
        "model",
        "train_time_s",
        "run_dir",
    } <= set(shared)
    pd.testing.assert_frame_equal(mine[shared], table[shared], check_dtype=False)
    assert list(mine["config.model.name"]) == list(table["param.model.name"])
    assert list(mine["config.task.delay"]) == list(table["param.task.delay"])


def test_runs_filters_and_sorts(compared):
    out, _, _ = compared
    code, text = cli("runs", "--out-dir", str(out), "model=gru", "task.delay=5", "--sort", "val/acc")
    lines = text.splitlines()
    assert code == 0 and lines[0].split()[:4] == ["id", "task", "model", "settings"]
    assert (
        len(lines) == 4
        and lines[-1] == f"2 of 8 runs under {out / 'runs'} (load them in Python: seqbench.load_runs(out_dir))"
    )
    assert all(" gru " in ln and "task.delay=5" in ln for ln in lines[1:3])
    accs = [float(ln.split("val/acc")[1].split()[0]) for ln in lines[1:3]]
    assert accs == sorted(accs, reverse=True)  # accuracy: best (highest) first
    code, text = cli("runs", "--out-dir", str(out), "--sort", "val/loss", "model=rnn,gru")
    ids = [ln.split()[0] for ln in text.splitlines()[1:-1]]
    frame = seqbench.load_runs(out).set_index("run_id").loc[ids]
    assert len(ids) == 8 and list(frame["final.val/loss"]) == sorted(frame["final.val/loss"])  # loss: lowest first


def test_runs_refuses_unknown_keys(compared, capsys):
    out, _, _ = compared
    assert main(["runs", "--out-dir", str(out), "bogus=1"]) == 2
    assert (
        "error: bogus: no run has this field; filter on task, model, status, seed, task.delay"
        in capsys.readouterr().err
    )
    assert main(["runs", "--out-dir", str(out), "--sort", "val/nope"]) == 2
    assert "error: --sort: 'val/nope' is not a column of these runs" in capsys.readouterr().err
    assert main(["runs", "--out-dir", str(out / "nowhere")]) == 2
    assert "error: --out-dir: no runs folder at" in capsys.readouterr().err


def test_tasks_with_different_primary_metrics_need_a_metric(capsys):
    assert main(["compare", "task=copy,adding", "model=lstm", "--print-spec"]) == 2
    assert capsys.readouterr().err == (
        "error: --metric: the compared tasks (copy, adding) have different primary "
        "metrics; name one they all report, e.g. --metric val/loss\n"
    )
    raw, _ = build_spec(["task=copy,adding", "model=lstm"], metric="val/loss")
    assert raw["metric"] == {"name": "val/loss", "goal": "minimize"}
