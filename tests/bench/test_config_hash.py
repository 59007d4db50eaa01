"""The config hash: which fields enter it is declared on the fields (``identity=False``), and the hash of
a config is the one the old name-list code gave, so run folders and results.json files written before
still match their configs (resume, reports joining replicates)."""

from __future__ import annotations

import pytest

from seqbench.bench.config import RunConfig, build_config
from seqbench.bench.core.schema import Section, in_identity

# Computed with the code that popped out_dir, run_id, tracking, resume, diagnostics and
# train.threads/checkpoint_every/flush_denormal by name (commit fe61cb3).
KNOWN = [
    ([], "1ca4de0cca99"),
    (["task=adding", "model=gru", "model.d_model=32"], "b933a4aadd30"),
    (
        ["model=transformer", "model.n_heads=2", "model.d_model=16", "optim.schedule=cosine", "optim.warmup_steps=10"],
        "0e910eec4af8",
    ),
    # [20, 40] (d88e667382f2 then) is refused now: the default copy task builds nothing shorter than 21;
    # the same hash code, with that check switched off, still gives d88e667382f2 for it
    (["train.early_stop={metric: val/acc, threshold: 0.9}", "eval.lengths=[21,40]", "seed=3"], "81280813702a"),
    (["task=sentiment", "model=lstm"], "85c545362241"),
    # every field that only says where or how a run is logged, observed or scheduled: the default's hash
    (
        [
            "train.threads=4",
            "train.checkpoint_every=null",
            "train.flush_denormal=false",
            "tracking.wandb=off",
            "tracking.project=p",
            "tracking.tags=[a]",
            "diagnostics.gradients=true",
            "diagnostics.every=5",
            "out_dir=/tmp/x",
            "run_id=abc",
            "resume=true",
        ],
        "1ca4de0cca99",
    ),
]


@pytest.mark.parametrize("overrides, expected", KNOWN, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_the_hash_of_a_config_is_the_one_old_runs_recorded(overrides, expected):
    assert build_config({}, overrides).config_hash() == expected


def _marked(cls: type, prefix: str = "") -> list[str]:
    out = []
    for name, field in cls.model_fields.items():
        if not in_identity(field):
            out.append(prefix + name)
        subs = [
            a
            for a in getattr(field.annotation, "__args__", (field.annotation,))
            if isinstance(a, type) and issubclass(a, Section)
        ]
        out += [k for s in subs for k in _marked(s, f"{prefix}{name}.")]
    return out


def test_what_leaves_the_hash_is_declared_on_the_fields():
    assert sorted(_marked(RunConfig)) == [
        "diagnostics",
        "out_dir",
        "resume",
        "run_id",
        "tracking",
        "train.checkpoint_every",
        "train.flush_denormal",
        "train.threads",
    ]


def test_every_other_field_changes_the_hash():
    base = build_config({})
    changed = {
        "optim.lr": 0.002,
        "train.max_steps": 7,
        "train.val_every": 3,
        "eval.test": False,
        "seed": 1,
        "model.d_model": 64,
        "task.delay": 9,
        "train.precision": "bf16-mixed",
        "optim.betas": [0.9, 0.98],
    }
    hashes = {k: build_config({}, [f"{k}={v}"]).config_hash() for k, v in changed.items()}
    assert base.config_hash() not in hashes.values() and len(set(hashes.values())) == len(hashes)


def test_a_field_added_later_keeps_old_hashes_and_counts_once_set():
    """``optim.betas`` came after runs were recorded (ADDED_LATER): at its default the hash is the old
    one; set to anything else (even back-and-forth through a file) it is a new experiment."""
    assert build_config({}, ["optim.betas=[0.9, 0.999]"]).config_hash() == "1ca4de0cca99"
    assert build_config({}, ["optim.betas=[0.9, 0.98]"]).config_hash() != "1ca4de0cca99"
