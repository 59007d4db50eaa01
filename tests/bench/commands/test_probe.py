"""``seqbench probe``: model groups from the command line, one study per probe x model through the sweep
runner, the card (terminal, card.json, card.md, index.html), resume, and a model that learns nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqbench.bench.commands.probe import probe
from seqbench.bench.commands.probe_plan import plan
from seqbench.bench.core.card_format import read_card
from seqbench.bench.core.errors import UserError
from seqbench.reports.card import terminal
from seqbench.sweeps.probes import QUICK, Battery, Ladder, Probe
from tests.helpers import run_cli

NO_MIXING = "tests.probe_plugins:NoMixing"
# Memorization of 4 facts takes an LSTM of width 16 about 50 steps at lr 0.03; a memoryless stack never
# gets past the map's value entropy. One rung of compression is there to be added later (resume).
MEMORIZE = Probe(
    "memorization",
    "memorization",
    "facts",
    Ladder("n_keys", (4, 32), "facts", 4),
    {"n_values": 4, "length": 8},
    steps=80,
)
COMPRESS = Probe(
    "compression", "compression", "summary", Ladder("length", (2,), "symbols", 2), {"alphabet": 2}, steps=20
)
TINY = Battery(
    "tiny",
    seeds=2,
    lrs=(0.03,),
    model={"d_model": 16, "n_layers": 1},
    run={
        "train.batch_size": 16,
        "train.val_every": 20,
        "train.val_batches": 2,
        "eval.test": False,
        "tracking.wandb": "off",
    },
    probes=(MEMORIZE, COMPRESS),
)
MODELS = ["model=lstm", "model=stack", f"model.mixer={NO_MIXING}"]


def runs(out: Path) -> set[str]:
    return {p.name for p in (out / "runs").iterdir()}


@pytest.mark.slow  # 12 tiny runs, and the LSTM must learn
def test_a_card_of_two_models_says_where_each_stops_and_a_second_call_trains_nothing(tmp_path, capsys):
    out = tmp_path / "outputs"
    r = probe(MODELS, profile=TINY, probes=["memorization"], out_dir=out, name="tiny")
    card = read_card(r.folder / "card.json")
    lstm, flat = card["entries"]
    assert [m["label"] for m in card["models"]] == ["lstm", "NoMixing"]
    assert lstm["frontier"] >= 0 and lstm["rungs"][0]["solved"] == 2 and lstm["complete"] and lstm["failed"] == []
    assert flat["frontier"] == flat["lo"] == flat["hi"] == -1  # below the first rung, said so
    assert all(r["solved"] == 0 for r in flat["rungs"]) and flat["rungs"][0]["mean"] < 0.95
    assert lstm["coverage"] == pytest.approx(0.5) and lstm["n_params"] > 0 and lstm["step_ms"] > 0
    text = terminal(card)
    assert "below 4 facts" in text and "NoMixing: fails memorization from the first rung (4 facts)" in text
    assert card["answer"][1].startswith("NoMixing: fails memorization from the first rung (4 facts) (below lstm's")
    for f in ("card.md", "index.html", "plotly.min.js"):
        assert (r.folder / f).is_file()
    assert (
        "Plotly.newPlot" in (r.folder / "index.html").read_text()
        and "# seqbench capability card" in (r.folder / "card.md").read_text()
    )
    before = runs(out)
    # the LSTM: rungs x seeds, one rate; NoMixing fails the first rung, so the ladder skips the second
    assert len(before) == 2 * 2 + 2 and flat["rungs"][1]["skipped"] == 2 and flat["rungs"][1]["n"] == 0
    capsys.readouterr()
    again = probe(MODELS, profile=TINY, probes=["memorization"], out_dir=out, name="tiny", retry_failed=True)
    printed = capsys.readouterr().out
    assert runs(out) == before and "RUNNING" not in printed  # the studies were done, and none failed
    assert "--retry-failed: 0 trial(s)" in printed
    same = json.dumps(again.card["entries"], sort_keys=True) == json.dumps(card["entries"], sort_keys=True)
    assert same  # (as JSON: a skipped rung's mean is NaN, which equals nothing)
    # a probe added later trains only its own runs: the memorization studies are reused as they are
    more = probe(MODELS, profile=TINY, out_dir=out, name="tiny")
    assert len(runs(out) - before) == 2 * 1 * 2 and len(more.card["entries"]) == 4


def test_model_groups_expand_like_compare_comma_lists():
    p = plan(
        [
            "model=lstm,gru",
            "model.forget_bias=2",
            "model=stack",
            "model.mixer=attention,mamba",
            "train.max_steps=50",
            "seeds=2",
            "optim.lr=0.001,0.01",
        ],
        QUICK,
    )
    assert [m.label for m in p.models] == ["lstm[forget_bias=2]", "gru", "attention", "mamba"]
    assert p.notes == ["note: model.forget_bias left out for model=gru (no such field)"]
    assert p.common == {"train.max_steps": 50} and p.seeds == [0, 1] and p.lrs == [0.001, 0.01]


@pytest.mark.parametrize(
    "settings, message",
    [
        (["train.max_steps=5"], "name a model to probe"),
        (["model.d_model=8", "model=lstm"], "comes before any model=NAME"),
        (["model=lstm", "task=copy"], "probe sets the tasks"),
        (["model=lstm", "model.widht=8"], "no field 'widht' in lstm"),
        (["model=lstm", "train.batch_size=8,16"], "probe sweeps only models"),
        (["model=lstm", "seed=3"], "set by probe"),
    ],
)
def test_bad_settings_are_one_line_errors(settings, message):
    with pytest.raises(UserError, match=message):
        plan(settings, QUICK)


def test_the_cli_prints_the_studies_and_refuses_bad_input_in_one_line(tmp_path):
    ok = run_cli("probe", "model=lstm", "--probes", "recall,copy", "--rungs", "2", "--print-config", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count("method: grid") == 2 and "values: [2, 4]" in ok.stdout and "probe-copy-" in ok.stdout
    bad = run_cli("probe", "model=lstm", "--probes", "recal", "--print-config", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert bad.stderr.startswith("error: --probes: unknown probe recal; allowed: recall,")
