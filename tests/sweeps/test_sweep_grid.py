"""One grid builder (``sweeps/grid.py``) behind compare, probe and verify: the typed spec each hands to the
runner is the spec its YAML loads back as, study names are digests that do not move, and each command
refuses in its own words."""

from __future__ import annotations

import subprocess
import sys

import pytest

from seqbench.bench.commands.compare import build_grid, build_spec, study_name
from seqbench.bench.commands.probe_plan import plan, specs
from seqbench.bench.commands.sweep import sweep
from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.load import find_claims, load_claim
from seqbench.sweeps.claims.schema import claim_grid, sweep_spec
from seqbench.sweeps.grid import NotAGrid, grid_of, grid_study, seeds_of, values_of
from seqbench.sweeps.probes import QUICK, select
from seqbench.sweeps.spec import load_spec
from tests.helpers import REPO

COMPARE = ["model=rnn,gru", "task=copy", "task.delay=3,5", "seeds=2", "task.n_symbols=2", "model.d_model=16"]


def test_compare_hands_the_runner_the_spec_its_yaml_loads_as(tmp_path):
    grid, notes = build_grid(COMPARE)
    name = grid.name("compare-")
    path = grid.write(tmp_path, name, notes, "compare")
    assert path == tmp_path / "specs" / f"{name}.yaml"
    loaded = load_spec(path)
    assert loaded.to_dict() == grid.spec.to_dict() and study_name(loaded) == study_name(grid.spec) == name
    assert path.read_text().startswith(f"# written by seqbench compare; `seqbench sweep THIS.yaml --study {name}`")
    assert build_spec(COMPARE)[0] == grid.raw and study_name(grid.raw) == name  # the dict API reads the same


def test_probe_hands_the_runner_the_spec_its_yaml_loads_as(tmp_path):
    chosen = select(QUICK, ["recall", "length_generalisation"], 2)
    p, jobs = specs(["model=lstm", "model=stack", "model.mixer=attention"], QUICK, chosen)
    assert len(jobs) == 4 and len({j.study for j in jobs}) == 4
    for j in jobs:
        path = j.grid.write(tmp_path, j.study, command="probe")
        assert load_spec(path).to_dict() == j.spec.to_dict()
        assert j.grid.name(f"probe-{j.probe.name}-") == j.study and j.study.startswith(f"probe-{j.probe.name}-")
    recall = jobs[0]
    assert list(recall.spec.parameters) == ["task.n_pairs", "optim.lr"]
    assert recall.spec.ladder is not None and recall.spec.ladder.best_of == ["optim.lr"]
    assert recall.spec.ladder.skip_solved
    assert recall.per_seed == len(QUICK.lrs) and recall.spec.metrics()[0].goal == "maximize"


def test_the_same_settings_give_the_same_names_as_before():
    """Names of studies that exist, computed before the builder: a changed digest orphans every study."""
    assert build_grid(["model=lstm,gru", "task=adding"])[0].name("compare-") == "compare-35000b2612"
    _, jobs = specs(["model=lstm"], QUICK, select(QUICK, ["recall", "copy"], 2))
    # probe names changed once on purpose (Nov 28 2026: the probes' ladders gained skip_solved, so a study of
    # the old battery is not continued under the new one); before: probe-recall-57a96078fc, probe-copy-203d50d580
    assert [j.study for j in jobs] == ["probe-recall-f0298b2eac", "probe-copy-7731e3d443"]


def test_the_builder_writes_the_primary_metric_and_keeps_a_seed_count():
    g = grid_study({"task.name": "copy"}, {"model.name": ["lstm", "gru"]}, 3, question="q")
    assert g.raw["metric"] == {"name": "val/acc", "goal": "maximize"} and g.raw["seeds"] == 3
    assert g.spec.seeds == [0, 1, 2] and [m.name for m in g.spec.metrics()] == ["val/acc"]
    assert list(g.raw) == ["question", "base", "method", "metric", "parameters", "seeds"]
    loss = grid_study({"task.name": "copy"}, {"model.name": ["lstm", "gru"]}, [0], metric="val/loss")
    assert loss.raw["metric"] == {"name": "val/loss", "goal": "minimize"}


def test_a_spec_that_is_not_a_grid_is_refused():
    raw = {"base": {"task": {"name": "copy"}}, "method": "random", "trials": 2, "parameters": {}}
    with pytest.raises(NotAGrid, match="method: a grid study runs every configuration"):
        grid_of({**raw, "parameters": {"optim.lr": {"distribution": "log_uniform", "min": 1e-4, "max": 1e-2}}})


def test_words_become_values_and_seeds():
    assert values_of("task.delay", "3,5") == [3, 5] and values_of("eval.lengths", "[8, 16]") == [[8, 16]]
    assert seeds_of("3") == 3 and seeds_of("0,2") == [0, 2]
    with pytest.raises(UserError, match="a value repeats"):
        values_of("model.name", "lstm,lstm")
    with pytest.raises(UserError, match="seeds: give a count"):
        seeds_of("0,x")


def test_every_shipped_claim_builds_through_the_grid_builder():
    for path in find_claims([]):
        claim = load_claim(path)
        if claim.kind == "cost":
            continue
        g = claim_grid(claim, "quick")
        assert g.spec == sweep_spec(claim, "quick") and g.raw["question"] == claim.question
        look = claim_grid(claim, "quick", seeds=[7, 8])
        assert look.spec.seeds == [7, 8] and look.spec.parameters == g.spec.parameters


def test_probe_refuses_in_its_own_words():
    with pytest.raises(UserError) as e:
        plan(["model=lstm", "seed=1"], QUICK)
    assert (
        str(e.value).startswith("seed: set by probe;") and "seeds=N" in str(e.value) and "compare" not in str(e.value)
    )
    with pytest.raises(UserError, match=r"resume: set by probe; re-running the same probe command"):
        plan(["model=lstm", "resume=true"], QUICK)


def test_probe_does_not_import_compare():
    code = "import sys, seqbench.bench.commands.probe; sys.exit('seqbench.bench.commands.compare' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


def test_a_typed_spec_names_its_file_and_a_file_names_itself(tmp_path):
    grid, _ = build_grid(COMPARE)
    with pytest.raises(UserError, match="needs study=NAME"):
        sweep(grid.spec, source=tmp_path / "x.yaml")
    with pytest.raises(UserError, match="a spec file is its own source"):
        sweep("demo", source=tmp_path / "x.yaml", study="x")
