"""Habits researchers bring from the anchors (Lightning, Hydra, their own typos) meet seqbench's way in
one line: Lightning's ``load_from_checkpoint``, a plan before a long verify, the order of a comparison's
values, intervals of bounded metrics, typos in filters and keys, and Hydra's override syntax."""

from __future__ import annotations

import contextlib
import io
import math

import pandas as pd
import pytest
import torch

import seqbench
from seqbench.bench.cli import main
from seqbench.bench.commands.compare import build_spec, study_name
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.stats import mean_ci, paired
from seqbench.bench.training.module import SeqModule
from seqbench.reports.comparisons import ranked
from seqbench.sweeps.table import Objective
from tests.bench.commands.test_compare import TINY
from tests.bench.commands.test_eval import BASE


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def one_line(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert all(n in lines[0] for n in needles), err
    return lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("habits")
    assert main(["run", *BASE, "train.max_steps=4", f"out_dir={out}"]) == 0
    return out, next((out / "runs").iterdir())


def test_lightning_load_from_checkpoint_works_on_a_seqbench_checkpoint(trained):
    _, run = trained
    model = SeqModule.load_from_checkpoint(run / "checkpoints" / "last.ckpt")
    ref = seqbench.load_model(run)
    assert not model.training and model.cfg == ref.cfg and model.trained_step == 4
    for (k, a), (_, b) in zip(model.state_dict().items(), ref.state_dict().items()):
        assert torch.equal(a, b), k


def test_load_from_checkpoint_elsewhere_points_to_load_model(tmp_path):
    stray = tmp_path / "model.ckpt"
    stray.write_bytes(b"")
    with pytest.raises(UserError, match=r"not a checkpoint of a seqbench run folder.*seqbench.load_model"):
        SeqModule.load_from_checkpoint(stray)


def test_eval_print_config_shows_the_evaluation_s_config_and_evaluates_nothing(trained):
    out, run = trained
    code, text, _ = cli("eval", run.name, "eval.lengths=[9, 12]", "--out-dir", str(out), "--print-config")
    assert code == 0 and text.startswith(f"# {run}") and "lengths:\n  - 9\n  - 12" in text
    assert not (run / "evals").exists()


def test_verify_plan_lists_studies_configurations_seeds_looks_and_time_and_runs_nothing(tmp_path):
    code, text, _ = cli("verify", "vanishing_gradients", "complexity_exponents", "--plan", "--out-dir", str(tmp_path))
    assert code == 0, text
    assert "plan: 2 claim(s), profile quick" in text and "nothing has run" in text
    assert "vanishing_gradients: study verify-vanishing_gradients-quick-" in text
    assert "4 configurations (model.name: rnn, lstm x model.recurrent_init: default, orthogonal)" in text
    seeds = ", ".join(str(s) for s in range(9940, 9950))
    assert f"seeds [{seeds}]; looks [7, 10]: 28 runs at the first look, 40 if every look runs" in text
    assert "registration: " in text and "registered 2026-11-25" in text  # sweeps/claims/registry.yaml
    assert "complexity_exponents: cost measurement" in text and "time: about" in text and "total: about" in text
    assert list(tmp_path.iterdir()) == []  # no journal, no runs, no report


def test_a_comparison_is_one_study_in_any_order_of_its_values(tmp_path):
    a = ["model=rnn,gru", "task.delay=3", "seeds=1", *TINY]
    b = ["model=gru,rnn", "task.delay=3", "seeds=1", *TINY]
    assert study_name(build_spec(a)[0]) == study_name(build_spec(b)[0])
    out = tmp_path / "out"
    assert cli("compare", *a, "--out-dir", str(out))[0] == 0
    code, text, _ = cli("compare", *b, "--out-dir", str(out))
    assert code == 0 and "2 configurations x 1 seed(s), 2 done" in text and "RUNNING" not in text, text


def test_intervals_of_bounded_metrics_stay_in_their_range():
    assert mean_ci([0.0, 0.5], bounds=(0.0, 1.0)).lo == 0.0 and mean_ci([0.5, 1.0], bounds=(0.0, 1.0)).hi == 1.0
    assert mean_ci([0.0, 0.5]).lo < 0  # unbounded: the plain Student-t interval
    d = paired([1.0, 0.0, 1.0], [0.0, 0.0, 0.0], bounds=(0.0, 1.0)).diff
    assert -1.0 <= d.lo and d.hi <= 1.0
    obj = Objective("val/acc", "maximize")
    df = pd.DataFrame(
        {
            "trial": [0, 0],
            "state": "COMPLETE",
            "seed": [0, 1],
            "run_id": ["a", "b"],
            "diverged": False,
            "param.model.name": "gru",
            obj.column: [0.25, 0.375],
        }
    )
    cell = ranked(df, obj)["mean [95% CI]"].iloc[0]
    lo, hi = (float(x) for x in cell[cell.index("[") + 1 : cell.index("]")].split(","))
    assert 0.0 <= lo and hi <= 1.0 and not math.isclose(lo, hi), cell


def test_runs_filter_typos_get_the_nearest_value(trained):
    out, _ = trained
    for typo in ("lstn", "LSTM"):
        code, _, err = cli("runs", f"model={typo}", "--out-dir", str(out))
        assert code == 2
        one_line(err, f"no run has model={typo}", "did you mean lstm?", "values here: lstm")
    assert cli("runs", "model=lstm", "--out-dir", str(out))[0] == 0


@pytest.mark.parametrize(
    "args, needles",
    [
        (["compare", "model=rnn,gru", "sedes=3", "--print-config"], ["sedes: unknown setting; did you mean seeds?"]),
        (["run", "model=LSTM", "--print-config"], ["unknown name 'LSTM'; did you mean lstm?"]),
        (["compare", "model=LSTM,gru", "--print-config"], ["did you mean lstm?"]),
        (["run", "hydra.run.dir=x", "--print-config"], ["hydra.run.dir: seqbench is not Hydra", "--out-dir"]),
        (
            ["run", "~model.dropout", "--print-config"],
            ["~model.dropout: Hydra's delete syntax", "model.dropout=<value>"],
        ),
        (
            ["run", "+model.dropout=0.1", "--print-config"],
            ["+model.dropout: Hydra's add syntax", "model.dropout=<value>"],
        ),
        (["compare", "model=rnn,gru", "+train.max_steps=5", "--print-config"], ["Hydra's add syntax"]),
    ],
)
def test_habits_get_one_line_that_says_what_seqbench_does(args, needles):
    code, _, err = cli(*args)
    assert code == 2
    line = one_line(err, *needles)
    assert "seed?" not in line  # a suggestion never names a key the command refuses
