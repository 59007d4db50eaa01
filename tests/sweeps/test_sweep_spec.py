"""Sweep specs: shipped specs load, per-model blocks, grid order, and one-line errors for each mistake."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from seqbench.bench.cli import main
from seqbench.bench.core.errors import UserError
from seqbench.sweeps import shipped_sweeps, spec_path
from seqbench.sweeps.liveness import trial_params
from seqbench.sweeps.spec import load_spec, parse_spec, trial_config
from seqbench.sweeps.study import enqueue_missing_grid, queue_order

BASE = {
    "task": {"name": "copy", "n_symbols": 2, "alphabet": 3, "delay": 4},
    "model": {"d_model": 16},
    "train": {"max_steps": 8},
}
MODELS_SWEPT = {"model.name": {"values": ["rnn", "lstm"]}}


def spec(**kw):
    return parse_spec({"base": BASE, **kw}, source="s.yaml")


SHIPPED = shipped_sweeps()


@pytest.mark.parametrize("shipped", SHIPPED, ids=lambda s: s.name)
def test_shipped_specs_load_and_say_what_they_ask(shipped):
    path = spec_path(shipped.name)
    text = path.read_text()
    s = load_spec(path)
    assert s.question and s.budget() >= 1
    assert s.question == shipped.question
    head = text.split("\nquestion:")[0]
    for word in ("Expected", "Measured"):  # each file documents the literature's answer and its CPU time
        assert word in head, f"{path.name}: header lacks '{word}'"


def test_shipped_sweeps_are_package_data_found_by_name(tmp_path, monkeypatch, capsys):
    names = [s.name for s in SHIPPED]
    assert {"demo", "long_dependency"} <= set(names)
    monkeypatch.chdir(tmp_path)  # outside the checkout: names (and the docs' sweeps/x.yaml) still resolve
    assert spec_path("demo") == spec_path("sweeps/demo.yaml") and spec_path("demo").name == "demo.yaml"
    (tmp_path / "demo").write_text("question: mine\n")
    assert spec_path("demo") == Path("demo")  # a path that exists wins
    shipped = r"^spec: no file 'nope' and no shipped sweep of that name; shipped: chomsky, demo, "
    with pytest.raises(UserError, match=shipped):
        spec_path("nope")
    assert main(["sweep", "nope.yaml"]) == 2
    assert "no shipped sweep of that name; shipped: " in capsys.readouterr().err
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {s.name:<34} {s.question}" in out for s in SHIPPED)


def test_grid_order_size_and_shorthands():
    s = spec(
        parameters={**MODELS_SWEPT, "task.delay": {"values": [3, 5, 7]}},
        seeds=3,
        metric={"name": "val/acc", "goal": "maximize"},
        pruner="median",
    )
    assert s.grid_size() == 6 and s.seeds == [0, 1, 2] and s.pruner.name == "median"
    assert s.grid()[:4] == [
        {"model.name": "rnn", "task.delay": 3},
        {"model.name": "rnn", "task.delay": 5},
        {"model.name": "rnn", "task.delay": 7},
        {"model.name": "lstm", "task.delay": 3},
    ]
    assert spec(parameters=MODELS_SWEPT, trials=1).grid() == [{"model.name": "rnn"}]


def test_exclude_leaves_out_the_points_matching_every_key_of_an_entry():
    axes = {**MODELS_SWEPT, "task.delay": {"values": [3, 5, 7]}}
    s = spec(parameters=axes, exclude=[{"model.name": "rnn", "task.delay": [5, 7]}, {"task.delay": 3.0}])
    assert s.grid() == [{"model.name": "lstm", "task.delay": 5}, {"model.name": "lstm", "task.delay": 7}]
    assert s.grid_size() == s.budget() == 2 and s.left_out() == 4
    assert s.to_dict()["exclude"] == [{"model.name": "rnn", "task.delay": [5, 7]}, {"task.delay": 3.0}]
    assert spec(parameters=axes, exclude=[{"model.name": "rnn"}], trials=2).grid() == [
        {"model.name": "lstm", "task.delay": 3},
        {"model.name": "lstm", "task.delay": 5},
    ]
    # a spec without exclude: writes none, so its study name and a study stored before the field are unchanged
    plain = spec(parameters=axes)
    assert "exclude" not in plain.to_dict() and plain.left_out() == 0 and len(plain.grid()) == 6


def test_exclude_names_a_bool_only_by_a_bool():
    axes = {"eval.test": {"values": [False, True]}}
    assert spec(parameters=axes, exclude=[{"eval.test": True}]).grid() == [{"eval.test": False}]
    with pytest.raises(UserError, match=r"exclude\[0\]\.eval\.test: 1 is not among its values \[False, True\]"):
        spec(parameters=axes, exclude=[{"eval.test": 1}])


def test_workers_take_the_longest_trainings_first_and_a_ladder_its_easy_rungs_first():
    s = spec(parameters={**MODELS_SWEPT, "train.max_steps": {"values": [4, 16]}})
    longest_first = [
        {"model.name": "rnn", "train.max_steps": 16},
        {"model.name": "lstm", "train.max_steps": 16},
        {"model.name": "rnn", "train.max_steps": 4},
        {"model.name": "lstm", "train.max_steps": 4},
    ]
    assert queue_order(s) == longest_first and s.grid()[0] == {"model.name": "rnn", "train.max_steps": 4}
    assert queue_order(s, longest_first=False) == s.grid()  # one worker: the grid's order, as fast
    study = optuna.create_study()
    assert enqueue_missing_grid(study, s, longest_first=True) == 4
    assert [trial_params(t) for t in study.get_trials(deepcopy=False)] == longest_first
    laddered = spec(
        parameters={"task.delay": {"values": [3, 5]}, "optim.lr": {"values": [1e-3, 3e-3]}},
        ladder={"param": "task.delay", "best_of": ["optim.lr"]},
    )
    assert queue_order(laddered) == laddered.grid()  # easier rungs first, whatever they cost


def test_per_model_block_reaches_only_its_model():
    s = spec(
        parameters=MODELS_SWEPT,
        per_model={"lstm": {"model.forget_bias": 3.0, "optim.lr": 0.02}},
        per_task={"copy": {"task.alphabet": 5}},
    )
    lstm = trial_config(s, {"model.name": "lstm"}, seed=4, extra={"tracking.group": "g"})
    rnn = trial_config(s, {"model.name": "rnn"}, seed=4, extra={})
    assert (lstm.model.forget_bias, lstm.optim.lr, lstm.seed, lstm.tracking.group) == (3.0, 0.02, 4, "g")
    assert rnn.optim.lr == 1e-3 and not hasattr(rnn.model, "forget_bias")
    assert lstm.model.d_model == rnn.model.d_model == 16 and lstm.task.alphabet == rnn.task.alphabet == 5


def test_default_metric_is_the_tasks_primary():
    assert [(m.name, m.goal) for m in spec().metrics()] == [("val/acc", "maximize")]
    s = parse_spec({"base": {"task": "adding", "train": {"max_steps": 8}}})
    assert [(m.name, m.goal) for m in s.metrics()] == [("val/mse", "minimize")]


def test_a_metric_without_goal_gets_the_declared_direction():
    s = spec(metric=[{"name": "test/loss"}, {"name": "val/acc"}, {"name": "time/train_s"}])
    assert [m.goal for m in s.metrics()] == ["minimize", "maximize", "minimize"]
    with pytest.raises(
        UserError, match=r"metric.name: 'val/bleu' is not reported by task 'copy'; choose from val/loss"
    ):
        spec(metric={"name": "val/bleu"})


@pytest.mark.parametrize(
    "kw, where, says",
    [
        ({"bogus": 1}, "bogus:", "allowed: question, base"),
        ({"method": "bayes"}, "method:", "'grid', 'tpe', 'random' or 'nsga2'"),
        (
            {"parameters": {"optim.lr": {"values": [1e-3], "distribution": "uniform", "min": 0, "max": 1}}},
            "parameters.optim.lr:",
            "either values",
        ),
        (
            {"parameters": {"optim.lr": {"distribution": "uniform", "min": 0.1, "max": 1}}},
            "parameters.optim.lr:",
            "method grid needs values",
        ),
        ({"parameters": {"model.nope": {"values": [1]}}}, "model.nope:", "unknown field; allowed: name, d_model"),
        (
            {"parameters": {"model.name": {"values": ["rnn", "nosuch"]}}},
            "parameters.model.name:",
            "unknown model 'nosuch'; choose from rnn",
        ),
        (
            {"parameters": MODELS_SWEPT, "per_model": {"nosuch": {"model.d_model": 8}}},
            "per_model.nosuch:",
            "unknown model; choose from",
        ),
        ({"parameters": MODELS_SWEPT, "per_model": {"gru": {"model.d_model": 8}}}, "per_model.gru:", "never chosen"),
        (
            {"base": {**BASE, "model": {"forget_bias": 1.0}}, "parameters": MODELS_SWEPT},
            "model.forget_bias:",
            "go under per_model.<name>",
        ),
        ({"metric": {"name": "val/mse", "goal": "minimize"}}, "metric.name:", "choose from val/loss, val/acc"),
        (
            {
                "metric": [{"name": "val/acc", "goal": "maximize"}, {"name": "time/train_s", "goal": "minimize"}],
                "pruner": "median",
            },
            "pruner:",
            "multi-objective",
        ),
        (
            {"method": "tpe", "parameters": {"optim.lr": {"distribution": "log_uniform", "min": 1e-4, "max": 1e-2}}},
            "trials:",
            "needs a budget",
        ),
        ({"parameters": {"task.delay": {"values": [3, 4]}}, "trials": 3}, "trials:", "grid's 2 points"),
        ({"seeds": [0, 0]}, "seeds:", "distinct"),
        ({"parameters": {"seed": {"values": [1, 2]}}}, "parameters.seed:", "not sweepable"),
        ({"parameters": {"model.d_model": {"values": [16, 0]}}}, "model.d_model:", "greater than or equal to 1"),
        ({"parameters": {"optim.warmup_steps": {"values": [0, 10]}}}, "optim.warmup_steps:", ">= train.max_steps"),
        (
            {
                "method": "random",
                "trials": 2,
                "parameters": {"optim.lr": {"distribution": "uniform", "min": -1, "max": 1}},
            },
            "optim.lr:",
            "greater than 0",
        ),
        ({"pruner": "asha"}, "pruner.name:", "'none', 'median' or 'hyperband'"),
        (
            {"parameters": MODELS_SWEPT, "per_model": {"lstm": {"model.name": "gru"}}},
            "per_model.lstm.model.name:",
            "cannot switch",
        ),
        ({"parameters": MODELS_SWEPT, "exclude": [{"model.nme": "rnn"}]}, "exclude[0].model.nme:", "did you mean"),
        ({"parameters": MODELS_SWEPT, "exclude": [{"model.name": "gru"}]}, "exclude[0].model.name:", "not among"),
        ({"parameters": MODELS_SWEPT, "exclude": [{}]}, "exclude[0]:", "empty"),
        ({"parameters": MODELS_SWEPT, "exclude": [{"model.name": ["rnn", "lstm"]}]}, "exclude:", "every grid point"),
        ({"parameters": MODELS_SWEPT, "exclude": [{"model.name": "rnn"}], "trials": 2}, "trials:", "grid's 1 points"),
        (
            {
                "method": "tpe",
                "trials": 2,
                "parameters": {"optim.lr": {"distribution": "log_uniform", "min": 1e-4, "max": 1e-2}},
                "exclude": [{"optim.lr": 1e-3}],
            },
            "exclude:",
            "use method grid",
        ),
        (
            {
                "parameters": {"task.delay": {"values": [3, 5]}, "optim.lr": {"values": [1e-3, 3e-3]}},
                "ladder": {"param": "task.delay", "best_of": ["optim.lr"]},
                "exclude": [{"task.delay": 5, "optim.lr": 1e-3}],
            },
            "exclude:",
            "not with ladder",
        ),
    ],
)
def test_each_mistake_gets_one_line_naming_the_field(kw, where, says):
    with pytest.raises(UserError) as e:
        spec(**kw)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("s.yaml: ") and where in msg and says in msg, msg


def test_cli_prints_a_bad_spec_as_one_line_and_exits_2(tmp_path, capsys):
    p = tmp_path / "bad.yaml"
    p.write_text("base: {train: {max_steps: 8}}\nparameters:\n  model.d_model: {values: [8, -1]}\n")
    assert main(["sweep", str(p), "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "model.d_model" in err and "\n" not in err
    assert not (tmp_path / "optuna.journal").exists()  # nothing started


def test_base_overrides_from_the_command_line(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("base: {train: {max_steps: 8}}\nparameters:\n  task.delay: {values: [3, 4]}\n")
    s = load_spec(p, ["train.max_steps=20", "model=gru"], trials=1)
    assert s.base["train"]["max_steps"] == 20 and s.base["model"] == {"name": "gru"} and s.budget() == 1
