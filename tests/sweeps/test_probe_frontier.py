"""The frontier of a probe from its study table (``sweeps/frontier.py``), the median's order-statistic
interval (``bench/core/stats.py``) and card.json (``bench/core/card_format.py``): pure, no training."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from scipy import stats as st

from seqbench.bench.core.card_format import CARD_VERSION, read_card, write_card
from seqbench.bench.core.stats import median_interval
from seqbench.sweeps.frontier import BELOW, probe_entry, seed_frontiers
from seqbench.sweeps.probes import EVAL_LENGTHS, QUICK, Ladder, Probe, rung_phrase, select

PROBE = Probe("recall", "assoc_recall", "recall", Ladder("n_pairs", (2, 4, 8), "pairs", 4))


def table(solved: dict[tuple[int, int, float], bool], acc: float = 0.5) -> pd.DataFrame:
    """A study table: (seed, rung, lr) -> solved; the solved runs at acc 1.0, the others at ``acc``."""
    rows = [
        {
            "run_id": f"r{s}-{r}-{lr}",
            "seed": s,
            "param.task.n_pairs": r,
            "param.optim.lr": lr,
            "status": "completed",
            "solved": ok,
            "final.val/acc": 1.0 if ok else acc,
            "baseline.val/acc": 0.06,
            "steps": 100,
            "train_time_s": 0.5,
            "n_params": 1000 * r,
            "model_flops_per_token": 1e4,
        }
        for (s, r, lr), ok in solved.items()
    ]
    return pd.DataFrame(rows)


def entry(solved, seeds=(0, 1, 2), per_seed=2):
    return probe_entry(
        table(solved),
        PROBE,
        model="m",
        study="s",
        seeds=list(seeds),
        per_seed=per_seed,
        metric="val/acc",
        maximize=True,
    )


def grid(fn, seeds=(0, 1, 2), rungs=(2, 4, 8), lrs=(1e-3, 1e-2)):
    return {(s, r, lr): fn(s, r, lr) for s in seeds for r in rungs for lr in lrs}


def test_a_seed_solves_a_rung_at_its_best_rate_and_its_frontier_needs_every_easier_rung():
    # seed 0 solves 2 and 4 (4 only at lr 1e-2); seed 1 solves 2 only; seed 2 solves 2 and 8 but not 4 (a gap)
    ok = {(0, 2), (0, 4), (1, 2), (2, 2), (2, 8)}
    e = entry(grid(lambda s, r, lr: (s, r) in ok and (r != 4 or lr == 1e-2)))
    assert e["seed_frontiers"] == {"0": 1, "1": 0, "2": 0}
    assert e["frontier"] == 0 and (e["lo"], e["hi"]) == (0, 1) and e["coverage"] == pytest.approx(0.75)
    assert e["gaps"] == ["seed 2 solved rung 3 above its frontier"]
    assert [r["solved"] for r in e["rungs"]] == [3, 1, 1] and all(r["n"] == 3 for r in e["rungs"])
    assert e["complete"] and e["n_params"] == 4000 and e["step_ms"] == pytest.approx(5.0)


def test_shares_get_exact_clopper_pearson_intervals():
    e = entry(grid(lambda s, r, lr: r == 2 or (r == 4 and s == 0)))
    r4 = e["rungs"][1]
    ci = st.binomtest(1, 3).proportion_ci(method="exact")
    assert (r4["solved"], r4["n"]) == (1, 3)
    assert (r4["share_lo"], r4["share_hi"]) == pytest.approx((ci.low, ci.high))
    assert e["rungs"][0]["share_lo"] == pytest.approx(0.025 ** (1 / 3))  # 3/3: lower bound (alpha/2)^(1/n)


def test_a_model_that_learns_nothing_is_below_the_first_rung_never_at_rung_zero():
    e = entry(grid(lambda s, r, lr: False), per_seed=2)
    assert e["frontier"] == BELOW == -1 and e["lo"] == e["hi"] == BELOW
    assert all(r["solved"] == 0 and r["mean"] == pytest.approx(0.5) for r in e["rungs"])


def test_a_seed_missing_a_run_is_not_counted_and_the_entry_says_incomplete():
    solved = grid(lambda s, r, lr: True)
    del solved[(1, 8, 1e-2)]  # seed 1's second rate at rung 8 never finished
    e = entry(solved)
    assert e["rungs"][2]["n"] == 2 and not e["complete"]
    assert e["seed_frontiers"]["1"] == 1  # rung 8 unknown: not counted as solved


def test_seed_frontiers_walk_from_the_first_rung():
    fronts, gaps = seed_frontiers([{0: False, 1: True}, {0: True, 1: True}], [0, 1])
    assert fronts == {0: BELOW, 1: 1} and gaps == ["seed 0 solved rung 2 above its frontier"]


@pytest.mark.parametrize("n, j", [(3, 1), (5, 1), (6, 1), (10, 2), (20, 6)])
def test_median_interval_is_the_narrowest_order_statistic_interval_covering_95(n, j):
    mi = median_interval(list(range(n)))
    assert (mi.lo, mi.hi) == (j - 1, n - j)
    assert mi.coverage == pytest.approx(1 - 2 * st.binom.cdf(j - 1, n, 0.5))
    assert n < 6 or mi.coverage >= 0.95
    assert mi.median == (n + 1) // 2 - 1  # the lower median: a value the seeds took


def test_median_interval_of_nothing_is_nan():
    assert math.isnan(median_interval([]).median)


def test_card_json_round_trips_and_refuses_what_it_does_not_declare(tmp_path):
    card = {"profile": "quick", "seeds": [0], "entries": [entry(grid(lambda s, r, lr: r == 2))]}
    path = write_card(tmp_path, card)
    back = read_card(path)
    assert back["version"] == CARD_VERSION and back["entries"][0]["frontier"] == 0
    with pytest.raises(ValueError, match="undeclared keys"):
        write_card(tmp_path, {"profile": "quick", "entries": [{"frontier_value": 3}]})
    path.write_text(json.dumps({**back, "version": CARD_VERSION + 1}))
    with pytest.raises(ValueError, match="reads up to"):
        read_card(path)
    path.write_text("{}")
    with pytest.raises(ValueError, match="not a seqbench card"):
        read_card(path)


def test_the_quick_battery_asks_recall_copying_state_tracking_and_length_generalisation_on_rising_ladders():
    assert {p.name: p.task for p in QUICK.probes} == {
        "recall": "assoc_recall",
        "fuzzy_recall": "fuzzy_recall",
        "selective_copy": "selective_copy",
        "state_tracking": "parity",
        "copy": "copy",
        "length_generalisation": "induction",
    }
    for p in QUICK.probes:
        assert list(p.ladder.rungs) == sorted(set(p.ladder.rungs)) and p.ladder.reference in p.ladder.rungs
    (lengths,) = [p for p in QUICK.probes if p.ladder.evaluated]
    assert lengths.ladder.rungs[0] == lengths.settings["length"]  # the first rung is the training length
    cut = select(QUICK, ["recall"], 1)[0]
    assert cut.ladder.rungs == (1,) and cut.ladder.reference == 1


LENGTHS = Probe("lengths", "induction", "lengths", Ladder(EVAL_LENGTHS, (32, 64, 128), "length ", 64))


def length_table(accs: dict[tuple[int, float], tuple[float, float, float]]) -> pd.DataFrame:
    """One run per (seed, lr), tested at 32, 64 and 128."""
    rows = [
        {
            "run_id": f"r{s}-{lr}",
            "seed": s,
            "param.optim.lr": lr,
            "status": "completed",
            "solved": a[0] >= 0.95,
            "final.val/acc": a[0],
            **{f"final.test@{n}/acc": v for n, v in zip((32, 64, 128), a)},
            "baseline.val/acc": 0.06,
        }
        for (s, lr), a in accs.items()
    ]
    return pd.DataFrame(rows)


def test_a_ladder_of_evaluation_lengths_reads_each_rung_from_one_run_per_rate_at_the_probes_threshold():
    accs = {
        (0, 1e-3): (1.0, 0.97, 0.40),  # seed 0 generalises to 64
        (0, 1e-2): (0.5, 0.5, 0.5),
        (1, 1e-3): (0.99, 0.94, 0.99),  # seed 1 misses 64 by a hair: frontier 32, a gap at 128
        (1, 1e-2): (0.2, 0.2, 0.2),
        (2, 1e-3): (0.3, 0.3, 0.3),
        (2, 1e-2): (1.0, 1.0, 0.96),  # seed 2 at its other rate: every length
    }
    e = probe_entry(
        length_table(accs), LENGTHS, model="m", study="s", seeds=[0, 1, 2], per_seed=2, metric="val/acc", maximize=True
    )
    assert e["seed_frontiers"] == {"0": 1, "1": 0, "2": 2}
    assert [r["solved"] for r in e["rungs"]] == [3, 2, 2] and e["complete"]
    assert e["rungs"][1]["mean"] == pytest.approx((0.97 + 0.94 + 1.0) / 3)  # each seed's best at 64
    assert e["gaps"] == ["seed 1 solved rung 3 above its frontier"]


def test_a_ladder_of_evaluation_lengths_is_tested_at_every_rung_and_refuses_a_setting_it_owns():
    from seqbench.bench.commands.probe_plan import specs
    from seqbench.bench.core.errors import UserError

    (lengths,) = [p for p in QUICK.probes if p.ladder.evaluated]
    _, (job,) = specs(["model=lstm"], QUICK, (lengths,))
    assert job.raw["base"]["eval"]["lengths"] == list(lengths.ladder.rungs) and job.raw["base"]["eval"]["test"]
    assert list(job.raw["parameters"]) == ["optim.lr"] and job.per_seed == len(QUICK.lrs)
    with pytest.raises(UserError, match=r"eval.lengths: probe length_generalisation sets it"):
        specs(["model=lstm", "eval.lengths=[64]"], QUICK, (lengths,))
    with pytest.raises(ValueError, match="needs stop_at"):
        Probe("x", "induction", "x", Ladder(EVAL_LENGTHS, (32, 64), "length ", 32), stop_at=None)


def test_the_card_counts_its_censored_cells_and_the_pairs_no_probe_tells_apart():
    from seqbench.reports.card import discrimination, discrimination_text

    def cell(model, probe, f, lo, hi):
        return {"model": model, "probe": probe, "frontier": f, "lo": lo, "hi": hi}

    card = {
        "models": [{"label": m} for m in ("a", "b", "c")],
        "probes": [{"name": "p", "rungs": [1, 2, 4]}, {"name": "q", "rungs": [1, 2, 4]}],
        "entries": [
            cell("a", "p", 0, 0, 1),
            cell("b", "p", 2, 2, 2),  # censored: the top rung; apart from a (1 < 2)
            cell("c", "p", 1, 1, 2),  # overlaps a and b
            cell("a", "q", BELOW, BELOW, BELOW),  # censored: below the first
            cell("b", "q", 1, 0, 1),
            cell("c", "q", 1, 1, 1),  # apart from a, not from b
        ],
    }
    d = discrimination(card)
    assert (d["cells"], d["censored"], d["apart"]) == (6, 2, 2)
    assert d["pairs"] == {"a / b": ["p", "q"], "a / c": ["q"], "b / c": []}
    assert discrimination_text(card).endswith("2 of 3; not told apart: b / c.")
    assert "2 of 6 cells (33%)" in discrimination_text(card)


def test_a_rung_of_one_reads_singular():
    assert [rung_phrase("pairs", 1), rung_phrase("pairs", 4), rung_phrase("noise ", 0.5)] == [
        "1 pair",
        "4 pairs",
        "noise 0.5",
    ]


def test_a_failed_trial_is_listed_with_its_rung_and_reason_until_a_retry_supersedes_it():
    from seqbench.reports.card import answer

    t = table(grid(lambda s, r, lr: r == 2))
    t = t[~((t["param.task.n_pairs"] == 8) & (t["seed"] == 1))].assign(state="COMPLETE", trial=0, fail_reason=None)
    fail = {"seed": 1, "param.task.n_pairs": 8, "param.optim.lr": 1e-3, "status": "not-started", "run_id": ""}
    lost = {**fail, "state": "FAIL", "trial": 7, "fail_reason": "OSError: [Errno 28] No space left on device"}
    retried = {**fail, "state": "FAIL", "trial": 5, "fail_reason": "killed (SIGKILL)", "superseded": True}
    t = pd.concat([t, pd.DataFrame([lost, retried])], ignore_index=True)
    e = probe_entry(t, PROBE, model="m", study="s", seeds=[0, 1, 2], per_seed=2, metric="val/acc", maximize=True)
    assert e["failed"] == ["n_pairs 8: OSError: [Errno 28] No space left on device"] and not e["complete"]
    card = {
        "models": [{"label": "m", "settings": []}],
        "probes": [{"name": "recall", "unit": "pairs", "rungs": [2, 4, 8], "reference": 4}],
        "entries": [e],
    }
    (line,) = answer(card)
    assert "failed: recall at n_pairs 8: OSError: [Errno 28] No space left on device" in line
    assert "--retry-failed" in line and "killed" not in line


def test_the_shipped_baseline_card_is_what_make_card_wrote():
    """reports/baseline/ (make card's copy) reads as a card of this version, its card.md is what the renderer
    makes of its card.json (never edited by hand), and it says where each shipped model stops."""
    from seqbench.bench.core.card_format import read_card
    from seqbench.reports.card import card_md
    from tests.helpers import REPO

    folder = REPO / "reports" / "baseline"
    card = read_card(folder / "card.json")
    assert (folder / "card.md").read_text() == card_md(card)
    labels = [m["label"] for m in card["models"]]
    assert {"lstm", "transformer", "attention[pos_encoding=alibi]", "mamba", "s4d", "hyena", "linear_attention"} <= set(
        labels
    )
    assert len(card["answer"]) == len(labels) and all(e["complete"] for e in card["entries"])
    assert len(card["entries"]) == len(labels) * len(card["probes"])
    assert [p["name"] for p in card["probes"]] == [p.name for p in QUICK.probes]  # the battery it ships with


def test_the_shipped_baseline_card_measures_most_frontiers_and_tells_every_pair_of_models_apart():
    """Issue 36's bar for the card: at most 20% of cells censored, and every pair of shipped models told
    apart by at least one probe whose frontier intervals do not overlap."""
    from seqbench.bench.core.card_format import read_card
    from seqbench.reports.card import discrimination
    from tests.helpers import REPO

    d = discrimination(read_card(REPO / "reports" / "baseline" / "card.json"))
    assert d["censored"] <= 0.2 * d["cells"]
    assert d["apart"] == len(d["pairs"]) == 28, [pair for pair, probes in d["pairs"].items() if not probes]


def test_a_seed_the_ladder_skipped_solves_nothing_there_and_leaves_the_entry_complete():
    t = table(grid(lambda s, r, lr: r == 2 or s == 0))
    skip = (t["seed"] == 1) & (t["param.task.n_pairs"] == 8)  # seed 1 failed rung 4: rung 8 never trained
    t.loc[skip, ["status", "run_id"]] = ["skipped", ""]
    t.loc[skip, "final.val/acc"] = math.nan
    e = probe_entry(t, PROBE, model="m", study="s", seeds=[0, 1, 2], per_seed=2, metric="val/acc", maximize=True)
    assert e["complete"] and e["seed_frontiers"] == {"0": 2, "1": 0, "2": 0}
    r8 = e["rungs"][2]
    assert (r8["n"], r8["skipped"], r8["solved"]) == (2, 1, 1) and "skipped" not in e["rungs"][1]
    assert r8["mean"] == pytest.approx(0.75)  # seeds 0 (1.0) and 2 (0.5): the skipped seed has no number
