"""``seqbench probe ... --against baseline|CARD``: a user's models beside another card's without retraining
it (issue 39 item 5), driven through the CLI with a plug-in mixer named by import path; refused in one line,
before anything trains, where the two cards would not measure the same thing."""

from __future__ import annotations

import json
from pathlib import Path

from seqbench.bench.core.card_against import baseline_path, beside, check
from seqbench.bench.core.card_format import read_card
from seqbench.bench.core.errors import UserError
from tests.helpers import run_cli

PLUGIN = ["model=stack", "model.mixer=tests.probe_plugins:NoMixing"]
# one probe, two rungs, two seeds, 20 steps: the cheapest card the quick battery makes (a few seconds a run)
SMALL = ["--probes", "copy", "--rungs", "2", "train.max_steps=20", "seeds=2", "tracking.wandb=off"]


def _one_line_refusal(p, *words: str) -> None:
    err = p.stderr.strip()
    assert p.returncode == 2 and "\n" not in err and "Traceback" not in err, err
    assert err.startswith("error: --against: ") and all(w in err for w in words), err


def test_the_shipped_baseline_card_ships_with_the_package_and_matches_todays_battery(tmp_path):
    """--print-config checks the plan against the card as a real probe does: the quick battery as it is
    today measures what the shipped card measured (else --against baseline would refuse every user)."""
    card = read_card(baseline_path())
    assert len(card["models"]) == 8 and card["profile"] == "quick"
    ok = run_cli("probe", *PLUGIN, "--against", "baseline", "--print-config", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    seeds = run_cli("probe", *PLUGIN, "seeds=2", "--against", "baseline", "--out-dir", "out", cwd=tmp_path)
    _one_line_refusal(seeds, "seeds differ (yours [0, 1], the shipped baseline card's [0, 1, 2])")
    steps = run_cli("probe", *PLUGIN, "train.max_steps=7", "--against", "baseline", "--out-dir", "out", cwd=tmp_path)
    _one_line_refusal(steps, "probe recall differs in steps (yours 7, the shipped baseline card's 500)")
    missing = run_cli("probe", *PLUGIN, "--against", str(tmp_path / "nowhere"), "--out-dir", "out", cwd=tmp_path)
    _one_line_refusal(missing, "no card at", "give 'baseline' or the path of a card.json")
    assert not (tmp_path / "out").exists()  # refused before any study, run folder or card was made


def test_a_plugin_is_put_beside_a_card_without_retraining_it(tmp_path):
    ref = run_cli("probe", "model=lstm", *SMALL, "--out-dir", "out", "--name", "ref", cwd=tmp_path)
    assert ref.returncode == 0, ref.stderr[-2000:]
    before = {p.name for p in (tmp_path / "out" / "runs").iterdir()}
    ref_card = read_card(tmp_path / "out" / "cards" / "ref" / "card.json")

    mine = run_cli(
        "probe", *PLUGIN, *SMALL, "--against", "out/cards/ref", "--out-dir", "out", "--name", "mine", cwd=tmp_path
    )
    assert mine.returncode == 0, mine.stderr[-2000:]
    card = read_card(tmp_path / "out" / "cards" / "mine" / "card.json")
    assert [m["label"] for m in card["models"]] == ["NoMixing", "lstm"]  # the user's model is the reference
    (lstm,) = [e for e in card["entries"] if e["model"] == "lstm"]
    assert json.dumps(lstm, sort_keys=True) == json.dumps(ref_card["entries"][0], sort_keys=True)
    new = {p.name for p in (tmp_path / "out" / "runs").iterdir()} - before
    assert new and all("stack" in n for n in new)  # only the plug-in trained; the lstm's entry was read
    said = "Beside this run's models: lstm from out/cards/ref/card.json"
    assert said in mine.stdout and said in (tmp_path / "out" / "cards" / "mine" / "card.md").read_text()
    assert "not retrained here" in (tmp_path / "out" / "cards" / "mine" / "index.html").read_text()
    assert card["against"]["models"] == ["lstm"] and card["against"]["git_sha"] == ref_card["git_sha"]

    fewer = run_cli(
        "probe", *PLUGIN, *SMALL[:2], "--rungs", "1", *SMALL[4:], "--against", "out/cards/ref", cwd=tmp_path
    )
    _one_line_refusal(fewer, "probe copy differs in rungs (yours [2], out/cards/ref/card.json's [2, 4])")


def test_a_label_measured_here_is_not_taken_twice_and_a_missing_probe_is_refused():
    probe = {"name": "copy", "task": "copy", "key": "n_symbols", "rungs": [2, 4], "reference": 2}
    head = {"profile": "quick", "seeds": [0, 1], "lrs": [0.01], "weight_decays": [0.0], "probes": [probe]}
    own = {**head, "models": [{"label": "lstm"}], "entries": [{"model": "lstm", "probe": "copy", "frontier": 1}]}
    other = {
        **head,
        "models": [{"label": "lstm"}, {"label": "gru"}],
        "entries": [
            {"model": "lstm", "probe": "copy", "frontier": 0},
            {"model": "gru", "probe": "copy", "frontier": 0},
        ],
    }
    card = beside(own, other, "theirs")
    assert [m["label"] for m in card["models"]] == ["lstm", "gru"]
    assert [(e["model"], e["frontier"]) for e in card["entries"]] == [("lstm", 1), ("gru", 0)]
    assert card["against"]["measured_here"] == ["lstm"]
    try:
        check({**own, "probes": [{**probe, "name": "recall"}]}, other, "theirs")
    except UserError as e:
        assert "probe 'recall' is not on theirs (it has copy)" in str(e)
    else:
        raise AssertionError("a probe the other card lacks was not refused")


def test_a_card_from_elsewhere_that_is_no_card_is_refused(tmp_path):
    (tmp_path / "card.json").write_text(json.dumps({"hello": 1}))
    p = run_cli("probe", *PLUGIN, "--against", str(tmp_path / "card.json"), "--print-config", cwd=tmp_path)
    _one_line_refusal(p, "not a seqbench card")
    assert Path(tmp_path / "card.json").read_text() == json.dumps({"hello": 1})
