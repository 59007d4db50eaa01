"""seqbench verify: judging on synthetic study tables, claim files (shipped and broken), one claim
end to end through the CLI, and (slow) the quick profile of the two fastest shipped claims."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from seqbench.bench.cli import main
from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.judge import FAILS, HOLDS, INCONCLUSIVE, MISSING, judge, judge_rule
from seqbench.sweeps.claims.schema import PROFILES, Rule, claim_files, load_claim, parse_claim, sweep_spec, swept_values
from seqbench.sweeps.spec import trial_config

SOURCE = {
    "cite": "Test 2024 Tab. 1",
    "paper": "A. Test 2024",
    "where": "Table 1",
    "metric": "MSE",
    "published": [{"what": "gru", "value": 5.3e-5, "unit": "MSE"}],
}
SWEPT = {"model.name": ["rnn", "gru"], "task.length": [50, 100]}


def table(values: dict[tuple[str, int], list[float | None]], baseline: float = 1 / 6) -> pd.DataFrame:
    """A study table as sweeps.table builds it: one row per run; None = a diverged seed."""
    rows = []
    for (model, length), per_seed in values.items():
        for seed, v in enumerate(per_seed):
            rows.append(
                {
                    "trial": len(rows),
                    "state": "COMPLETE",
                    "seed": seed,
                    "run_id": f"{model}{length}s{seed}",
                    "status": "diverged" if v is None else "completed",
                    "param.model.name": model,
                    "param.task.length": length,
                    "final.val/mse": math.nan if v is None else v,
                    "baseline.val/mse": baseline,
                }
            )
    return pd.DataFrame(rows)


def rule(**kw) -> Rule:
    return Rule.model_validate({"name": "r", "metric": "val/mse", **kw})


GOOD = {
    ("gru", 50): [0.001, 0.002, 0.0015],
    ("gru", 100): [0.003, 0.004, 0.002],
    ("rnn", 50): [0.16, 0.17, 0.165],
    ("rnn", 100): [0.05, 0.17, 0.12],
}


def test_holds_fails_and_inconclusive_from_the_interval():
    t = table(GOOD)
    held = judge_rule(rule(where={"model.name": "gru", "task.length": 50}, below=0.01), t, SWEPT)
    assert held.verdict == HOLDS and held.interval.n == 3 and held.interval.hi < 0.01
    failed = judge_rule(rule(where={"model.name": "rnn", "task.length": 50}, below=0.01), t, SWEPT)
    assert failed.verdict == FAILS and failed.interval.lo > 0.01
    # rnn at 100: mean 0.113, wide interval across 0.1
    unsure = judge_rule(rule(where={"model.name": "rnn", "task.length": "max"}, above=0.1), t, SWEPT)
    assert unsure.verdict == INCONCLUSIVE and unsure.interval.lo < 0.1 < unsure.interval.hi
    assert "contains the threshold" in unsure.why and unsure.config == "model.name=rnn, task.length=100"


def test_baseline_thresholds_and_paired_differences():
    t = table(GOOD)
    # a baseline multiple asks, per seed, whether a run left the plateau: 3 of 3 seeds is p = 1/8, undecided
    at_base = judge_rule(rule(where={"model.name": "rnn", "task.length": 50}, above={"baseline": 0.9}), t, SWEPT)
    assert at_base.cut["above"] == pytest.approx(0.15) and at_base.thresholds == {"above": 0.5}
    assert at_base.verdict == INCONCLUSIVE and at_base.interval.fmt().startswith("3/3 seeds")
    eight = table({**GOOD, ("rnn", 50): [0.16, 0.17, 0.165] * 2 + [0.16, 0.17]})
    at_base = judge_rule(rule(where={"model.name": "rnn", "task.length": 50}, above={"baseline": 0.9}), eight, SWEPT)
    assert at_base.verdict == HOLDS and at_base.p_alone == pytest.approx(2 * 0.5**8)  # 8 of 8: a sign test
    diff = judge_rule(
        rule(where={"model.name": "rnn", "task.length": 50}, minus={"model.name": "gru", "task.length": 50}, above=0.1),
        t,
        SWEPT,
    )
    assert diff.verdict == HOLDS and diff.interval.mean == pytest.approx(0.165 - 0.0015)


def test_one_replicate_is_inconclusive_not_judged_on_a_point():
    t = table({**GOOD, ("gru", 50): [0.001]})
    r = judge_rule(rule(where={"model.name": "gru", "task.length": 50}, below=0.01), t, SWEPT)
    assert r.verdict == INCONCLUSIVE and "fewer than 2 replicates" in r.why


def test_missing_configuration_and_missing_metric_are_named():
    t = table({k: v for k, v in GOOD.items() if k != ("gru", 100)})
    r = judge_rule(rule(where={"model.name": "gru", "task.length": 100}, below=0.01), t, SWEPT)
    assert r.verdict == MISSING and r.why == "no completed run of model.name=gru, task.length=100"
    r = judge_rule(rule(where={"model.name": "gru", "task.length": 50}, metric="val/acc", below=0.5), t, SWEPT)
    assert r.verdict == MISSING and "val/acc was not recorded" in r.why


def test_diverged_seed_is_inconclusive_unless_the_rule_says_what_it_counts_as():
    t = table({**GOOD, ("gru", 50): [0.001, None, 0.002, 0.0015, 0.001, 0.002, 0.0012, 0.0018, 0.0011]})
    where = {"model.name": "gru", "task.length": 50}
    default = judge_rule(rule(where=where, below=0.01), t, SWEPT)
    assert default.verdict == INCONCLUSIVE and default.n_diverged == 1 and "diverged" in default.why
    left_out = judge_rule(rule(where=where, below=0.01, diverged="exclude"), t, SWEPT)
    assert left_out.verdict == HOLDS and left_out.interval.n == 8 and "1 diverged, left out" in left_out.measured()
    assert left_out.estimate.scale == "log"  # nothing imputed: the geometric mean
    # an imputed seed is a point mass (every diverged seed the same value): judged per seed, 8 of 9 pass
    as_base = judge_rule(rule(where=where, below=0.01, diverged="baseline"), t, SWEPT)
    assert as_base.per_seed.startswith("diverged seeds are imputed") and as_base.interval.n == 9
    assert as_base.verdict == HOLDS and as_base.p_alone == pytest.approx(2 * 10 / 2**9)  # P(>= 8 of 9 | 1/2)
    as_base_above = judge_rule(rule(where=where, above=0.5, diverged="baseline"), t, SWEPT)
    assert as_base_above.verdict == FAILS and as_base_above.interval.mean == 0.0


def test_claim_verdict_combines_rules():
    raw = {
        "question": "q?",
        "source": SOURCE,
        "figure": "length",
        "base": {"task": {"name": "adding"}},
        "parameters": {"model.name": {"values": ["rnn", "gru"]}, "task.length": {"values": [50, 100]}},
        "profiles": {"quick": {}, "paper": {}},
        "expect": [
            {
                "name": "gru solves",
                "where": {"model.name": "gru", "task.length": 50},
                "metric": "val/mse",
                "below": 0.01,
            },
            {
                "name": "rnn at baseline",
                "where": {"model.name": "rnn", "task.length": 100},
                "metric": "val/mse",
                "above": 0.1,
            },
        ],
    }
    claim = parse_claim(raw, "c")
    assert judge(claim, table(GOOD), SWEPT, "quick")[0] == INCONCLUSIVE
    strong = {**GOOD, ("rnn", 100): [0.16, 0.17, 0.165]}
    assert judge(claim, table(strong), SWEPT, "quick")[0] == HOLDS
    weak = {**strong, ("gru", 50): [0.1, 0.12, 0.11]}
    assert judge(claim, table(weak), SWEPT, "quick")[0] == FAILS


# -- claim files ----------------------------------------------------------------------------
@pytest.mark.parametrize("path", claim_files(), ids=lambda p: p.stem)
def test_shipped_claim_loads_validates_every_profile_and_cites_numbers(path: Path):
    claim = load_claim(path)  # every profile's spec checked (each grid point built), every rule resolved
    assert len(claim_files()) >= 8
    src = claim.source
    assert src.published and all(math.isfinite(p.value) and p.unit.strip() for p in src.published)
    for profile in PROFILES:
        assert claim.rules(profile)
        if claim.kind == "cost":
            assert set(swept_values(claim, profile)["model.name"]) >= {
                r.where["model.name"] for r in claim.rules(profile)
            }
            continue
        spec = sweep_spec(claim, profile)
        assert len(spec.seeds) >= 2, "a verdict needs replicates"
        for point in spec.grid():  # the run config every trial would train (no training)
            cfg = trial_config(spec, point, spec.seeds[0], {})
            assert cfg.task.name == (point.get("task.name") or spec.config_dict(point)["task"]["name"])


def _claim_file(tmp_path: Path, **changes) -> Path:
    raw = {
        "question": "Does the gradient of a tanh RNN decay faster than an LSTM's?",
        "source": SOURCE,
        "figure": "through_time",
        "base": {
            "task": {"name": "copy", "n_symbols": 2, "alphabet": 3, "delay": 6},
            "model": {"d_model": 8},
            "train": {"max_steps": 2, "val_every": 2, "val_batches": 1, "batch_size": 4},
            "eval": {"test": False},
            "tracking": {"wandb": "off"},
            "diagnostics": {"gradients": True, "every": 1},
        },
        "metric": {"name": "val/loss", "goal": "minimize"},
        "parameters": {"model.name": {"values": ["rnn", "lstm"]}},
        "seeds": 2,
        "profiles": {"quick": {}, "paper": {"base": {"train": {"max_steps": 4}}}},
        "expect": [
            {"name": "rnn decays", "where": {"model.name": "rnn"}, "metric": "diag/decay_rate@first", "above": 0.0}
        ],
    }
    raw.update(changes)
    path = tmp_path / "tiny_claim.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        ({"expect": [{"name": "x", "where": {}, "metric": "val/loss", "below": 1}]}, "where: must fix model.name"),
        (
            {"expect": [{"name": "x", "where": {"model.name": "gru"}, "metric": "val/loss", "below": 1}]},
            "model.name='gru' is not among the swept values",
        ),
        (
            {"expect": [{"name": "x", "where": {"model.name": "rnn"}, "metric": "val/loss"}]},
            "needs below:, above: or between:",
        ),
        ({"profiles": {"quick": {}}}, "profiles: needs paper"),
        (
            {"profiles": {"quick": {}, "paper": {"base": {"train": {"max_stepz": 4}}}}},
            "profile paper: .*train.max_stepz: unknown field",
        ),
        ({"source": {**SOURCE, "published": []}}, "source.published: List should have at least 1 item"),
        ({"sauce": 1}, "sauce"),
    ],
)
def test_a_broken_claim_is_refused_with_the_field_named(tmp_path, change, message):
    with pytest.raises(UserError, match=message):
        load_claim(_claim_file(tmp_path, **change))


def test_one_claim_end_to_end_through_the_cli(tmp_path, capsys):
    path = _claim_file(tmp_path)
    out = tmp_path / "out"
    assert main(["verify", str(path), "--out-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "claim" in printed and "measured (mean [95% CI] n)" in printed
    line = next(x for x in printed.splitlines() if x.startswith("tiny_claim ") and "rnn decays" in x)
    assert "Test 2024 Tab. 1" in line and "diag/decay_rate@first" in line and "n=2" in line
    # 2 seeds of a decay rate near 0.74: a t interval with 1 degree of freedom reaches below 0, so undecided
    assert "claim verdicts: tiny_claim inconclusive (undecided after look 1 of 1, n=2, alpha 0.05)" in printed
    assert line.rstrip().endswith("inconclusive (the interval contains the threshold)")
    page = (out / "verify" / "index.html").read_text()
    assert "Does the gradient of a tanh RNN decay" in page and "data-title='through_time'" in page
    assert (out / "verify" / "plotly.min.js").is_file()
    md = (out / "verify" / "verify.md").read_text()
    assert "| tiny_claim |" in md and "rnn decays" in md
    # a rule that cannot hold: judged (exit 0) unless --strict
    failing = _claim_file(
        tmp_path,
        expect=[
            {
                "name": "rnn keeps everything",
                "where": {"model.name": "rnn"},
                "metric": "diag/decay_rate@first",
                "below": -10.0,
            }
        ],
    )
    assert main(["verify", str(failing), "--out-dir", str(out)]) == 0  # resumes the study: no retraining
    assert "claim verdicts: tiny_claim fails (decided at look 1 of 1, n=2, alpha 0.05)" in capsys.readouterr().out
    assert main(["verify", str(failing), "--out-dir", str(out), "--strict"]) == 1


def test_a_claim_that_cannot_run_exits_nonzero(tmp_path, capsys, monkeypatch):
    import seqbench.bench.training.train

    def broken(*a, **k):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(seqbench.bench.training.train, "train_run", broken)  # one worker: trials run in this process
    assert main(["verify", str(_claim_file(tmp_path)), "--out-dir", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "trial 0 failed: RuntimeError: out of memory" in out
    assert "no completed run of model.name=rnn" in out


def test_unknown_claim_name_is_a_one_line_error(capsys):
    assert main(["verify", "no_such_claim"]) == 2
    assert "neither a shipped claim nor a file; shipped: attention_bottleneck" in capsys.readouterr().err


def _fake_cost(seed: int):
    """``seqbench cost`` with step times of known exponents (rnn and lstm T + 16, attention 0.005 T + 1e-5 T^2:
    1.73 over the 4 longest lengths) and 3% lognormal noise per point, so a cost claim's verdict is implied."""
    import numpy as np

    rng = np.random.default_rng(seed)
    times = {
        "rnn": lambda T: 0.04 * (T + 16),
        "lstm": lambda T: 0.006 * (T + 16),
        "transformer": lambda T: 0.005 * T + 1e-5 * T**2,
    }

    def measure(cfg):
        rows = [
            {"model": m, "length": T, "status": "ok", "time_ms": f(T) * float(np.exp(rng.normal(0, 0.03)))}
            for m, f in times.items()
            for T in cfg.lengths
        ]
        return {"rows": rows, "summary": {m: {} for m in times}, "meta": {}}

    return measure


@pytest.mark.slow
def test_quick_profile_of_the_two_fastest_shipped_claims(tmp_path, capsys, monkeypatch):
    """vanishing_gradients trains for real (fixed seeds, CPU: deterministic); complexity_exponents judges
    step times of known exponents (real timings depend on the machine's load, so no verdict follows from
    them). Each claim's verdict is the one its setup implies, not any verdict."""
    from seqbench.bench.commands import verify as v

    monkeypatch.setattr("seqbench.bench.training.cost.measure_cost", _fake_cost(27))
    monkeypatch.setattr(v, "cost_figure", lambda rows, meta: None)
    res = {r.claim.name: r for r in v.verify(["vanishing_gradients", "complexity_exponents"], out_dir=tmp_path).results}
    vg, cx = res["vanishing_gradients"], res["complexity_exponents"]
    # its control "the LSTM learns the copy task" is a baseline multiple, judged per seed (a sign test): at
    # 5 of 5 seeds (p = 0.031 before Holm) it could not hold, so the claim was re-registered with looks [7, 10]
    # on fresh seeds; 7 of 7 agree, so look 1 decides and every rule and control holds
    assert vg.verdict_text() == "holds (decided at look 1 of 2, n=7, alpha 0.0191)"
    learns = next(c for c in vg.controls if "learns the copy task" in c.rule.name)
    assert learns.verdict == HOLDS and learns.interval.n == 7 and learns.per_seed.startswith("a baseline")
    assert [r.verdict for r in vg.rules if "initialisation" in r.rule.name] == [HOLDS] * 3
    assert [r.verdict for r in vg.rules if r.rule.name.startswith("after training")] == [HOLDS] * 3
    # known exponents 1, 1 and 1.73 with small fixed costs: the fixed-cost controls are shares (judged per
    # replicate: 5 of 5 cannot decide, 10 of 10 can), so look 2 of 3 decides and every rule holds
    assert cx.verdict_text() == "holds (decided at look 2 of 3, n=10 replicates, alpha 0.0157)"
    assert [r.verdict for r in [*cx.controls, *cx.rules]] == [HOLDS] * 6
    assert (tmp_path / "verify" / "index.html").read_text().count("<section id=") == 2


# -- figures that show the verdict, cost metrics ---------------------------------------------------
def test_the_verdict_figure_draws_each_compared_configuration_and_the_thresholds():
    from seqbench.reports.verify_html import claim_figure
    from seqbench.sweeps.claims.judge import judge_all
    from seqbench.sweeps.table import Objective

    raw = {
        "question": "q?",
        "source": SOURCE,
        "figure": "length",
        "base": {"task": {"name": "adding"}},
        "parameters": {"model.name": {"values": ["rnn", "gru"]}, "task.length": {"values": [50, 100]}},
        "profiles": {"quick": {}, "paper": {}},
        "controls": [
            {
                "name": "gru learns",
                "where": {"model.name": "gru", "task.length": 50},
                "metric": "val/mse",
                "below": 0.01,
            }
        ],
        "expect": [
            {
                "name": "rnn worse",
                "where": {"model.name": "rnn", "task.length": 50},
                "minus": {"model.name": "gru", "task.length": 50},
                "metric": "val/mse",
                "above": 0.1,
                "control": "gru learns",
            }
        ],
    }
    claim = parse_claim(raw, "c")
    t = table(GOOD).assign(**{"objective:val/mse": lambda d: d["final.val/mse"], "diverged": False})
    verdict, rules, controls, _ = judge_all(claim, t, SWEPT, "quick")
    assert verdict == HOLDS
    figs = claim_figure("length", t, Objective("val/mse", "minimize"), [*controls, *rules])
    verdict_fig, named = figs
    names = [tr.name for tr in verdict_fig.data]
    # both sides of the difference, separately, and the difference with its threshold
    assert "model.name=rnn, task.length=50" in names and "model.name=gru, task.length=50" in names
    assert "model.name=rnn, task.length=50 minus model.name=gru, task.length=50" in names
    assert "rnn worse: above 0.1" in names and "gru learns: below 0.01" in names
    assert [a.text for a in verdict_fig.layout.annotations][:2] == ["val/mse", "difference of val/mse"]
    # the named figure: one line per configuration (here per model; two swept keys -> a label of both)
    assert sorted(tr.name for tr in named.data if tr.mode == "lines+markers") == ["gru", "rnn"]


def test_cost_metrics_fit_four_lengths_and_state_the_flop_prediction_and_fixed_share():
    from seqbench.sweeps.claims.cost import cost_metrics
    from seqbench.sweeps.claims.schema import cost_config

    cfg = cost_config({"models": ["transformer", "rnn"], "lengths": [128, 256, 512, 1024], "d_model": 32})
    rows = [
        {"model": "transformer", "length": T, "status": "ok", "time_ms": ms}
        for T, ms in zip([128, 256, 512, 1024], [10.0, 17.0, 37.8, 102.4])
    ]  # issue 19's quiet-machine times
    m = cost_metrics("transformer", rows, cfg)
    assert m["time_exponent_long"] == pytest.approx(m["time_exponent"]) and 1.0 < m["time_exponent"] < 1.3
    assert m["flops_exponent"] > m["time_exponent"] + 0.3  # the count predicts a steeper slope than timed
    assert m["fixed_share"] == pytest.approx(10.0 / 102.4)
    assert math.isnan(m["time_exponent_upper"])  # 2 points are not a fit
    short = cost_metrics("transformer", rows[:3], cfg)
    assert math.isnan(short["time_exponent"]) and math.isnan(short["flops_exponent"])
    from seqbench.sweeps.claims.judge import judge_rule

    t = pd.DataFrame(
        [
            {
                "trial": 0,
                "seed": s,
                "run_id": f"r{s}",
                "status": "completed",
                "param.model.name": "transformer",
                **{f"final.{k}": v for k, v in m.items()},
            }
            for s in range(3)
        ]
    )
    r = judge_rule(
        Rule.model_validate(
            {"name": "e", "where": {"model.name": "transformer"}, "metric": "time_exponent_long", "between": [1.5, 2.2]}
        ),
        t,
        {"model.name": ["transformer"]},
    )
    assert f"FLOP count predicts {m['flops_exponent_long']:.3g}, fixed-cost share 10%" in r.measured()
    from seqbench.reports.verify_html import verdict_figure

    fig = verdict_figure(t, [r])  # the timed exponent, its band and the FLOP count's prediction beside it
    marks = {tr.name: tr.y for tr in fig.data}
    assert marks["model.name=transformer: FLOP count"] == (pytest.approx(m["flops_exponent_long"]),)
    assert marks["e: lo 1.5"] == (1.5, 1.5) and marks["e: hi 2.2"] == (2.2, 2.2)
    with pytest.raises(UserError, match="cost.lengths: at least 4"):
        cost_config({"models": ["rnn"], "lengths": [128, 256, 512]})


def test_diagnostics_metrics_per_run():
    from seqbench.bench.core.diagnostics_format import Record
    from seqbench.sweeps.claims.diag import diag_metrics

    recs = [
        Record(
            step=0,
            global_grad_norm=2.0,
            w_hh_spectral_norm={},
            layer_grad_norm={
                "embed": 9.0,
                "backbone.stack.layers.0": 0.5,
                "backbone.stack.layers.11": 1.6,
                "backbone.stack.layers.2": 0.7,
                "head": 3.0,
            },
        ),
        Record(step=5, global_grad_norm=float("inf"), w_hh_spectral_norm={}, layer_grad_norm={}),
        Record(step=9, global_grad_norm=40.0, w_hh_spectral_norm={}, layer_grad_norm={}),
    ]
    m = diag_metrics(recs)
    assert m["diag/last_layer_grad_norm@first"] == 1.6  # layer 11, not the lexically last "2"
    assert m["diag/global_grad_norm@first"] == 2.0 and m["diag/global_grad_norm@max"] == math.inf
    assert math.isnan(m["diag/decay_rate@first"]) and all(math.isnan(v) for v in diag_metrics([]).values())


def test_a_trial_failed_only_by_diverged_seeds_is_a_result_and_any_other_failure_is_reported():
    """Read from the runs' own statuses, not the fail reason's wording."""
    import pandas as pd

    from seqbench.sweeps.claims.runner import failed_trials

    table = pd.DataFrame(
        [
            {"trial": 0, "state": "FAIL", "status": "diverged", "fail_reason": "anything at all"},
            {"trial": 0, "state": "FAIL", "status": "completed", "fail_reason": "anything at all"},
            {"trial": 1, "state": "FAIL", "status": "not-started", "fail_reason": "RuntimeError: boom"},
            {"trial": 2, "state": "COMPLETE", "status": "completed", "fail_reason": None},
        ]
    )
    assert failed_trials(table) == ["trial 1 failed: RuntimeError: boom"]


def cost_claim(**profile) -> dict:
    return {
        "question": "does time grow linearly?",
        "kind": "cost",
        "source": SOURCE,
        "figure": "cost",
        "cost": {"models": ["rnn"], "lengths": [128, 256, 512, 1024], "d_model": 8},
        "profiles": {"quick": profile, "paper": {"replicates": 2}},
        "expect": [
            {"name": "linear", "where": {"model.name": "rnn"}, "metric": "time_exponent_long", "between": [0.8, 1.2]}
        ],
    }


def test_cost_claim_looks_count_replicates_and_stop_at_the_first_deciding_look(monkeypatch, tmp_path):
    """A cost claim's looks are replicate counts: measured up to each look, judged at alpha / len(looks),
    stopped at the first look that decides; a later run reuses the cached replicates."""
    from seqbench.bench.commands import verify as v
    from seqbench.sweeps.claims.schema import parse_claim

    slopes = iter([0.85, 1.15, 1.0, 1.0, 1.01, 0.99, 1.0, 1.0, 1.0])  # noisy first look, tight later
    calls = []

    def fake_cost(cfg):
        e, T = next(slopes), [128, 256, 512, 1024]
        calls.append(e)
        rows = [{"model": "rnn", "length": t, "status": "ok", "time_ms": 0.01 * t**e} for t in T]
        return {"rows": rows, "summary": {"rnn": {}}, "meta": {}}

    monkeypatch.setattr("seqbench.bench.training.cost.measure_cost", fake_cost)
    monkeypatch.setattr(v, "cost_figure", lambda rows, meta: None)
    claim = parse_claim(cost_claim(looks=[3, 6, 9]), "c")
    assert claim.replicates_for("quick") == 9 and claim.replicates_for("paper") == 2
    res = v.verify_claim(claim, "quick", tmp_path, 1, None)
    assert res.verdict == HOLDS and len(calls) == 6  # look 1 (0.85, 1.15, 1.0) undecided; look 2 decides
    assert res.looks == "decided at look 2 of 3, n=6 replicates, alpha 0.0157"  # O'Brien-Fleming-type share
    assert len(res.table) == 6 and res.rules[0].interval.n == 6
    again = v.verify_claim(claim, "quick", tmp_path, 1, None)  # cached: nothing measured again
    assert again.verdict == HOLDS and len(calls) == 6
    # the looks were judged: re-cutting them over the same replicates is refused, in one line
    with pytest.raises(
        UserError,
        match=r"looks \[3, 6\], but study quick-\w+-cost already judged seeds 0-8 at "
        r"looks \[3, 6, 9\] .*start a fresh study with another --out-dir",
    ):
        v.verify_claim(parse_claim(cost_claim(looks=[3, 6]), "c"), "quick", tmp_path, 1, None)
    with pytest.raises(UserError, match=r"cost.replicates: 5 disagrees with looks: \[3, 6\]"):
        parse_claim(cost_claim(looks=[3, 6], replicates=5), "c")


def test_the_plan_says_when_a_first_look_cannot_decide_a_per_seed_rule():
    from seqbench.bench.commands.verify_plan import looks_that_cannot_decide

    (note,) = looks_that_cannot_decide([6, 10])  # O'Brien-Fleming spends 0.0114 at 6 of 10; 6 of 6 give 1/64
    assert note.startswith("look 1 (n=6) cannot decide") and "p = 0.0156" in note and "alpha 0.0114" in note
    assert looks_that_cannot_decide([7, 10]) == [] and looks_that_cannot_decide([10]) == []
    # looks [3, 5]: 3 of 3 give 0.125 at look 1; 5 of 5 give 0.031, under look 2's 0.0386 (one rule, no Holm)
    assert [n[:6] for n in looks_that_cannot_decide([3, 5])] == ["look 1"]
