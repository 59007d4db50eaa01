"""Text loading and tokenizers: local files, bad files, hub names offline, cache, splits."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from seqbench.bench.core.errors import UserError
from seqbench.tasks.text import data
from seqbench.tasks.text.tokenize import EOS, PAD, SPECIALS, UNK, TextTokenizer
from tests.helpers import REPO

TEXTS = ["The cat sat on the mat.\nThe dog ran!  ", "héllo wörld\n\nthe end\n", "a b c\n"]


@pytest.mark.parametrize("kind", ["char", "word", "bpe"])
def test_tokenizer_roundtrip_and_char_counts(kind):
    vocab = 300 if kind == "bpe" else 40
    tok = TextTokenizer.train(kind, TEXTS, vocab, lowercase=False)
    assert tok.vocab_size <= vocab
    ids, nchars = tok.encode_stream(TEXTS[1])
    assert nchars.sum() == len(TEXTS[1])  # every character is accounted to exactly one token
    assert len(ids) == len(nchars) and ids.min() >= 0 and ids.max() < tok.vocab_size
    assert tok.decode(ids).split() == TEXTS[1].split()
    again = TextTokenizer.from_json(tok.to_json())
    assert np.array_equal(again.encode_stream(TEXTS[1])[0], ids)


def test_tokenizer_specials_and_frequency_ranking():
    tok = TextTokenizer.train("word", ["b a a", "a c b"], 6, lowercase=False)
    assert [tok._id_to_str[i] for i in range(4)] == list(SPECIALS)
    assert tok.encode_batch(["a b"])[0].tolist() == [4, 5]  # most frequent first, cap at 6
    assert tok.encode_batch(["c zebra"])[0].tolist() == [UNK, UNK]
    ids, _ = tok.encode_stream("a\nb\n")
    assert ids.tolist() == [4, EOS, 5, EOS]
    char = TextTokenizer.train("char", ["aab"], 10, lowercase=True)
    assert char.encode_batch(["ABz"])[0].tolist() == [4, 5, UNK] and PAD == 0


def test_resolve_source_kinds(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("text,label\nhi,1\n")
    assert data.resolve_source(str(f)).format == "csv"
    assert data.resolve_source(str(tmp_path)).files == (f,)
    assert data.resolve_source("SetFit/sst2").kind == "hub"
    with pytest.raises(UserError, match="no such file"):
        data.resolve_source(str(tmp_path / "missing.csv"))
    (tmp_path / "b.txt").write_text("x")
    with pytest.raises(UserError, match="mixes file formats"):
        data.resolve_source(str(tmp_path))


def test_bad_files_name_the_file(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(UserError, match=r"empty.txt: file is empty"):
        data.check_file(empty)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("text,label\ncaf\xe9,1\n".encode("latin-1"))
    with pytest.raises(UserError, match=r"latin.csv: not valid UTF-8 \(byte 14\)"):
        data.check_file(latin)


def test_splits_are_deterministic_and_disjoint():
    labels = np.array([0] * 70 + [1] * 30)
    a = data.stratified_split(labels, 0.1, 0.2, seed=3)
    b = data.stratified_split(labels, 0.1, 0.2, seed=3)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["val"], data.stratified_split(labels, 0.1, 0.2, seed=4)["val"])
    assert sorted(np.concatenate(list(a.values()))) == list(range(100))
    assert np.bincount(labels[a["val"]]).tolist() == [7, 3]  # stratified
    docs = data.split_documents([f"d{i}" for i in range(10)], 0.1, 0.1, seed=0)
    assert sum(map(len, docs.values())) == 10 and all(docs.values())


def test_cache_roundtrip_and_key(tmp_path):
    c = data.TokenCache(str(tmp_path), "t", ["a", 1])
    assert c.load() is None
    c.save({"m": 1}, {"x": np.arange(3)}, "{}")
    meta, arrays, tok = data.TokenCache(str(tmp_path), "t", ["a", 1]).load()
    assert meta == {"m": 1} and arrays["x"].tolist() == [0, 1, 2] and tok == "{}"
    assert data.TokenCache(str(tmp_path), "t", ["a", 2]).dir != c.dir


def test_offline_is_set_by_loading_text_not_by_importing_the_config():
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    code = (
        "import os, sys, seqbench.bench.config\n"
        "print(os.environ.get('HF_HUB_OFFLINE'), 'datasets' in sys.modules)\n"
        "from seqbench.tasks.text import data\n"
        "data.import_datasets()\n"
        "import huggingface_hub.constants as c\n"
        "print(os.environ.get('HF_HUB_OFFLINE'), c.HF_HUB_OFFLINE)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines()[-2:] == ["None False", "1 True"], out.stderr[-1000:]


def test_offline_hub_name_fails_fast():
    data.import_datasets()  # import time is not the point: the lookup must not retry
    t0 = time.perf_counter()
    with pytest.raises(UserError, match=r"'some/hubname' is not in the local Hugging Face cache.*task.source=path"):
        data.load_hub("some/hubname", None)
    assert time.perf_counter() - t0 < 10


def test_offline_hub_name_exit_code_2_through_the_cli(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env["HF_HOME"] = str(tmp_path / "hf")
    cmd = [
        sys.executable,
        "-m",
        "seqbench",
        "run",
        "task=sentiment",
        "task.source=some/hubname",
        "tracking.wandb=off",
        f"out_dir={tmp_path}",
    ]
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr[-2000:]
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert "some/hubname" in lines[-1] and "task.source=path/to/data.csv" in lines[-1]
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "task, name, body",
    [("sentiment", "latin.csv", b"text,label\ncaf\xe9,1\n"), ("lm", "latin.txt", b"hello w\xf6rld\n")],
)
def test_non_utf8_file_through_the_cli_names_the_file(tmp_path, capsys, task, name, body):
    from seqbench.bench.cli import main

    f = tmp_path / name
    f.write_bytes(body)
    code = main(
        [
            "run",
            f"task={task}",
            f"task.source={f}",
            f"task.cache_dir={tmp_path / 'cache'}",
            f"out_dir={tmp_path / 'out'}",
            "tracking.wandb=off",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"{f}: not valid UTF-8" in err[0], err
