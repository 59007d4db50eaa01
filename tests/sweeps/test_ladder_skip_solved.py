"""``ladder: {skip_solved: true}`` (sweeps/ladder.py): a seed that solved a rung at one rate is not trained
at the rung's other rates, the table says ``solved-elsewhere`` (not ``skipped``), and the frontier is what
the full grid gives."""

from __future__ import annotations

import math

import pytest
import yaml
from optuna.trial import TrialState

from seqbench.bench.cli import main
from seqbench.sweeps.frontier import probe_entry
from seqbench.sweeps.ladder import LadderSpec, seed_order
from seqbench.sweeps.spec import load_spec
from tests.sweeps.test_probe_frontier import PROBE, grid, table
from tests.sweeps.test_sweep_runner import judge_runs, load, write_spec


def test_a_seed_solved_at_one_rate_is_not_trained_at_the_other_and_the_table_says_where(tmp_path, monkeypatch):
    """One worker, grid order (delay 2, lr 1e-3), (2, 1e-2), (3, 1e-3), (3, 1e-2). At delay 2 seeds 0 and 1
    solve at 1e-3 and seed 2 only at 1e-2; the 1e-2 point trains its seeds in the order 1, 2, 0, so it
    trains seed 2 alone. At delay 3 nobody solves anything: every seed trains at both rates."""
    trained = judge_runs(monkeypatch, {(0, 2, 1e-3), (1, 2, 1e-3), (2, 2, 1e-2)})
    out = tmp_path / "out"
    p = write_spec(
        tmp_path,
        parameters={"task.delay": {"values": [2, 3]}, "optim.lr": {"values": [1e-3, 1e-2]}},
        seeds=[0, 1, 2],
        ladder={"param": "task.delay", "best_of": ["optim.lr"], "skip_solved": True},
    )
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    at_2 = [(s, lr) for s, d, lr in trained if d == 2]
    assert at_2 == [(0, 1e-3), (1, 1e-3), (2, 1e-3), (2, 1e-2)]  # seeds 1 and 0 not trained again at 1e-2
    assert sorted((s, lr) for s, d, lr in trained if d == 3) == [(s, lr) for s in (0, 1, 2) for lr in (1e-3, 1e-2)]
    st = load(out, "tiny")
    by = {(t.params["task.delay"], t.params["optim.lr"]): t for t in st.get_trials()}
    t = by[(2, 1e-2)]
    assert t.state == TrialState.COMPLETE and t.user_attrs["seeds"] == [1, 2, 0]
    assert t.user_attrs["solved_elsewhere"] == [1, 0] and t.user_attrs["solved_seeds"] == [2]
    assert [bool(r) for r in t.user_attrs["run_ids"]] == [False, True, False] and "skipped" not in t.user_attrs
    assert len(t.user_attrs["per_seed"]) == 3 and t.user_attrs["per_seed"][0] is None

    from seqbench.sweeps.table import build_table, runs_root

    rows = build_table(st, runs_root(st, out))
    here = rows[(rows["param.task.delay"] == 2) & (rows["param.optim.lr"] == 1e-2)].set_index("seed")
    assert here.loc[1, "status"] == here.loc[0, "status"] == "solved-elsewhere" and here.loc[2, "status"] != "skipped"


def test_a_point_whose_every_seed_solved_elsewhere_is_pruned_with_the_reason(tmp_path, monkeypatch):
    judge_runs(monkeypatch, {(s, 2, 1e-3) for s in (0, 1)})
    out = tmp_path / "out"
    p = write_spec(
        tmp_path,
        parameters={"task.delay": {"values": [2]}, "optim.lr": {"values": [1e-3, 1e-2]}},
        seeds=[0, 1],
        ladder={"param": "task.delay", "best_of": ["optim.lr"], "skip_solved": True},
    )
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    by = {t.params["optim.lr"]: t for t in load(out, "tiny").get_trials()}
    assert by[1e-3].state == TrialState.COMPLETE
    assert by[1e-2].state == TrialState.PRUNED
    assert "seed 1 not trained: it solved this rung at optim.lr=0.001" in by[1e-2].user_attrs["prune_reason"]


def test_skip_solved_needs_best_of_parameters(tmp_path):
    p = write_spec(
        tmp_path,
        parameters={"task.delay": {"values": [2, 3]}},
        ladder={"param": "task.delay", "best_of": [], "skip_solved": True},
    )
    with pytest.raises(Exception, match="ladder.skip_solved: needs best_of"):
        load_spec(p)
    assert yaml.safe_load(p.read_text())["ladder"]["skip_solved"] is True


def test_the_points_of_a_rung_start_on_seeds_spread_over_the_list():
    ladder = LadderSpec(param="task.delay", best_of=["optim.lr"], skip_solved=True)
    axes = {"task.delay": [2, 3], "optim.lr": [1e-3, 3e-3, 1e-2]}
    starts = [seed_order(ladder, axes, {"task.delay": 3, "optim.lr": lr}, 6)[0] for lr in axes["optim.lr"]]
    assert starts == [0, 2, 4]
    assert sorted(seed_order(ladder, axes, {"task.delay": 3, "optim.lr": 1e-2}, 6)) == list(range(6))
    off = LadderSpec(param="task.delay", best_of=["optim.lr"])
    assert seed_order(off, axes, {"task.delay": 3, "optim.lr": 1e-2}, 6) == list(range(6))


def test_a_seed_solved_elsewhere_counts_as_solving_the_rung_and_not_as_skipped():
    """The same grid as a full one where seed 0 solves every rung at lr 1e-3: its 1e-2 runs, not made,
    leave its frontier, the entry's completeness and the rung's solved count as they were."""
    full = table(grid(lambda s, r, lr: s == 0 and lr == 1e-3))
    cut = full.copy()
    gone = (cut["seed"] == 0) & (cut["param.optim.lr"] == 1e-2)
    cut.loc[gone, ["status", "run_id"]] = ["solved-elsewhere", ""]
    cut.loc[gone, "final.val/acc"] = math.nan

    def entry_of(t):
        return probe_entry(t, PROBE, model="m", study="s", seeds=[0, 1, 2], per_seed=2, metric="val/acc", maximize=True)

    a, b = entry_of(full), entry_of(cut)
    assert b["complete"] and b["seed_frontiers"] == a["seed_frontiers"] == {"0": 2, "1": -1, "2": -1}
    assert all("skipped" not in r for r in b["rungs"])
    assert [(r["n"], r["solved"], r["mean"]) for r in b["rungs"]] == [
        (r["n"], r["solved"], r["mean"]) for r in a["rungs"]
    ]
    # read as a status the frontier does not know, the same rows leave seed 0 one run short at every rung:
    # its best is unknown, so it would lose its frontier and every rung a seed
    unknown = cut.copy()
    unknown.loc[gone, "status"] = "not-a-status"
    assert entry_of(unknown)["seed_frontiers"]["0"] == -1 and entry_of(unknown)["rungs"][0]["n"] == 2
