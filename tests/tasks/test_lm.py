"""The lm task: splits without leakage, streams, batch layout, bpc, sampling, a run, and learning."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from seqbench.bench.config import build_config
from seqbench.bench.training.train import build_task, train_run
from seqbench.models.base import build_model
from seqbench.tasks.text.lm import strip_markdown

LINES = [
    "Now is the winter of our discontent",
    "Made glorious summer by this sun of York;",
    "And all the clouds that lour'd upon our house",
    "In the deep bosom of the ocean buried.",
]


def write_docs(tmp_path, n=5):
    d = tmp_path / "docs"
    d.mkdir(exist_ok=True)
    for i in range(n):
        (d / f"doc{i}.txt").write_text("\n".join(LINES[(i + k) % 4] + f" {i}" for k in range(40)) + "\n")
    return d


def make(tmp_path, *ov):
    cfg = build_config(
        {}, ["task=lm", f"task.cache_dir={tmp_path / 'cache'}", "tracking.wandb=off", f"out_dir={tmp_path}", *ov]
    )
    return build_task(cfg)


@pytest.fixture(scope="module")
def plays(tmp_path_factory):
    """The shipped plays, char level, tokenized once for this module."""
    return make(tmp_path_factory.mktemp("plays"))


def test_no_play_in_two_splits(plays):
    docs = plays.documents
    names = [n for s in ("train", "val", "test") for n in docs[s]]
    assert len(names) == len(set(names)) == 38 and "hamlet" in names  # 37 plays + Edward III
    assert all(docs[s] for s in ("val", "test"))
    text = plays.tokenizer.decode(plays.streams["val"][:3000].tolist())
    assert "**" not in text and "\n#" not in text and ":\n" in text  # markup stripped, NAME: kept
    assert plays.baseline()["bpc"] == pytest.approx(plays.baseline()["loss"] / math.log(2), rel=1e-3)


def test_strip_markdown():
    md = "# Hamlet\n\n## ACT I\n\n_Enter BERNARDO_\n\n**BERNARDO**  \nWho's there?  \nStand.\n\n\n"
    assert strip_markdown(md) == "Hamlet\n\nACT I\n\nEnter BERNARDO\n\nBERNARDO:\nWho's there?\nStand.\n"


@pytest.mark.parametrize("tok", ["char", "word", "bpe"])
def test_local_files_split_by_file_and_count_characters(tmp_path, tok):
    src = write_docs(tmp_path)
    task = make(tmp_path, f"task.source={src}", f"task.tokenizer={tok}", "task.vocab_size=300")
    files = [f for s in ("train", "val", "test") for f in task.documents[s]]
    assert len(files) == len(set(files)) == 5
    for s in ("train", "val", "test"):
        chars = sum(len((src / f.split("/")[-1]).read_text()) for f in task.documents[s])
        assert int(task.nchars[s].sum()) == chars  # bpc denominators are the text's characters


def test_single_file_contiguous_split(tmp_path):
    f = tmp_path / "one.txt"
    f.write_text("".join(f"line {i} of the text\n" for i in range(500)))
    task = make(tmp_path, f"task.source={f}")
    total = sum(int(task.nchars[s].sum()) for s in ("train", "val", "test"))
    assert total == len(f.read_text()) and 0.08 < len(task.streams["test"]) / total < 0.12
    dec = task.tokenizer.decode(task.streams["test"][:12].tolist())
    assert dec.startswith("line 4")  # cut at a line boundary in the last 10%


def test_stateful_batches_continue_each_row(tmp_path):
    task = make(tmp_path, f"task.source={write_docs(tmp_path)}", "task.stateful=true", "task.length=8")
    assert task.spec.stateful
    it = iter(task.loader("train", 4))
    a, b = next(it), next(it)
    assert torch.equal(a["x"][:, 1:], a["y"][:, :-1])  # targets are the inputs shifted by one
    assert torch.equal(b["x"][:, 0], a["y"][:, -1])  # batch k+1 continues batch k, row by row
    r0 = next(iter(task.loader("train", 2, rank=0, world_size=2)))["x"]
    r1 = next(iter(task.loader("train", 2, rank=1, world_size=2)))["x"]
    assert torch.equal(torch.cat([r0, r1]), a["x"])  # ranks own disjoint rows of the same layout


def test_stateless_training_windows_are_random(tmp_path):
    task = make(tmp_path, f"task.source={write_docs(tmp_path)}", "task.length=8")
    assert not task.spec.stateful
    it = iter(task.loader("train", 4))
    a, b = next(it), next(it)
    assert torch.equal(a["x"][:, 1:], a["y"][:, :-1]) and not torch.equal(b["x"][:, 0], a["y"][:, -1])
    val = [v["x"] for v in task.loader("val", 4, n_batches=2)]
    assert torch.equal(val[1][:, 0], next(iter(task.loader("val", 4)))["y"][:, -1])  # eval walks rows in order


def test_bpc_metric_counts_characters(tmp_path):
    task = make(tmp_path, f"task.source={write_docs(tmp_path)}", "task.tokenizer=word", "task.length=8")
    item = next(iter(task.loader("val", 3)))
    batch = task.materialize(item, torch.device("cpu"))
    logits = torch.randn(3, 8, task.spec.n_classes)
    m = task.metrics()
    task.update_metrics(m, logits, batch)
    nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.y.flatten(), reduction="sum")
    assert float(m["bpc"].compute()) == pytest.approx(float(nll) / math.log(2) / int(item["nchars"].sum()), rel=1e-5)
    assert float(m["ppl"].compute()) == pytest.approx(math.exp(float(nll) / 24), rel=1e-5)


class PrefixOnly(nn.Module):
    """A stateless causal model (like attention): returns no state, refuses inputs longer than L."""

    def __init__(self, vocab, length):
        super().__init__()
        self.emb, self.length, self.calls = nn.Embedding(vocab, vocab), length, 0

    def forward(self, batch, state=None):
        assert state is None and batch.x.shape[1] <= self.length
        self.calls += 1
        return self.emb(batch.x), None


def test_generation_with_and_without_state(tmp_path):
    task = make(tmp_path, f"task.source={write_docs(tmp_path)}", "task.length=16", "task.sample_tokens=40")
    V = task.spec.vocab_size
    net = PrefixOnly(V, 16)
    out = task.generate(net, torch.device("cpu"), [5, 6, 7], 40, temperature=1.0)
    assert len(out) == 40 and net.calls == 41 and all(0 <= t < V for t in out)
    cfg = build_config(
        {},
        [
            "task=lm",
            f"task.source={write_docs(tmp_path)}",
            f"task.cache_dir={tmp_path / 'cache'}",
            "task.length=16",
            "model.d_model=8",
        ],
    )
    lstm = build_model(cfg.model, task.spec)
    lstm.train()
    report = task.final_report(lstm, torch.device("cpu"))
    assert report["sample"]["tokens"] == 40 and 0 < len(report["sample"]["text"]) <= 40 and lstm.training
    again = task.final_report(lstm, torch.device("cpu"))
    assert again == report  # seeded sampling


def test_run_writes_sample_and_metrics(tmp_path):
    cfg = build_config(
        {},
        [
            "task=lm",
            f"task.source={write_docs(tmp_path)}",
            f"task.cache_dir={tmp_path / 'c'}",
            "task.tokenizer=bpe",
            "task.vocab_size=300",
            "task.stateful=true",
            "task.length=8",
            "model.d_model=16",
            "train.max_steps=4",
            "train.val_every=2",
            "train.batch_size=4",
            "eval.lengths=[16]",
            "task.sample_tokens=10",
            "tracking.wandb=off",
            f"out_dir={tmp_path}",
        ],
    )
    r = train_run(cfg, progress=False)
    assert r["status"] == "completed" and {"val/loss", "val/ppl", "val/bpc", "test@16/bpc"} <= set(r["final"])
    assert r["extras"]["sample"]["tokens"] == 10 and set(r["baseline"]) == {"val/loss", "val/ppl", "val/bpc"}


@pytest.mark.slow
def test_small_lstm_beats_unigram_bpc_on_shakespeare(tmp_path, plays):
    cfg = build_config(
        {},
        [
            "task=lm",
            f"task.cache_dir={plays.cfg.cache_dir}",
            "model=lstm",
            "model.d_model=64",
            "task.length=64",
            "task.stateful=true",
            "train.batch_size=16",
            "optim.lr=5e-3",
            "train.max_steps=150",
            "train.val_every=150",
            "train.val_batches=8",
            "eval.test=false",
            "task.sample_tokens=0",
            "tracking.wandb=off",
            f"out_dir={tmp_path}",
        ],
    )
    r = train_run(cfg, progress=False)  # ~16 s of training; reached 3.35 vs the unigram's 4.82 bits/char
    assert r["final"]["val/bpc"] < r["baseline"]["val/bpc"] - 1.0, (r["final"], r["baseline"])
