"""W&B sits on top of the harness's own files, follows W&B's own conventions (WANDB_* variables)
where seqbench's fields were left unset, mirrors metrics.csv at the trainer step, and can never
stop a run. Offline runs are read back from their ``.wandb`` log (W&B writes no readable summary
file offline)."""

from __future__ import annotations

import csv
import json
import struct
import sys
import time
from pathlib import Path

import pytest

from seqbench.bench.config import build_config
from seqbench.bench.core.artifacts import wandb_group
from seqbench.bench.training.train import train_run
from tests.helpers import tiny_overrides

TINY = {"train.max_steps": 6, "train.val_every": 2}


def records(run_dir: Path) -> list:
    """The protobuf records of an offline run's ``run-<id>.wandb`` (a LevelDB-style log: 32 KiB
    blocks of chunks with a 7-byte header: CRC32, length, type full/first/middle/last)."""
    from wandb.proto import wandb_internal_pb2 as pb

    raw = next(run_dir.glob("*.wandb")).read_bytes()
    out, pos, buf, block = [], 7, b"", 32768  # the file starts with a 7-byte W&B header
    while pos + 7 <= len(raw):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, n, kind = struct.unpack("<IHB", raw[pos : pos + 7])
        chunk, pos = raw[pos + 7 : pos + 7 + n], pos + 7 + n
        if kind in (1, 2):
            buf = chunk
        elif kind in (3, 4):
            buf += chunk
        if kind in (1, 4):
            r = pb.Record()
            r.ParseFromString(buf)
            out.append(r)
    return out


def offline_run(root: Path, run_id: str) -> Path:
    found = list((root / "wandb").glob(f"offline-run-*-{run_id}"))
    assert len(found) == 1, list(root.rglob("*"))
    return found[0]


def finished_records(root: Path, run_id: str) -> list:
    """The records once W&B's service has written the run's exit record: ``finish`` returns when
    the service has the records, which writes them to disk a moment later."""
    run_dir, deadline = offline_run(root, run_id), time.time() + 20
    while True:
        recs = records(run_dir)
        if any(r.WhichOneof("record_type") == "exit" for r in recs) or time.time() > deadline:
            return recs
        time.sleep(0.05)


def the_run_record(recs: list):
    return next(r.run for r in recs if r.WhichOneof("record_type") == "run")


def history(recs: list) -> list[dict]:
    return [
        {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item}
        for r in recs
        if r.WhichOneof("record_type") == "history"
    ]


def summary(recs: list) -> dict:
    out: dict = {}
    for r in recs:
        if r.WhichOneof("record_type") == "summary":
            out.update({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.summary.update})
    return out


@pytest.fixture
def offline(monkeypatch):
    for v in ("WANDB_MODE", "WANDB_PROJECT", "WANDB_ENTITY", "WANDB_DIR"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    return monkeypatch


def _run(out_dir: Path, **extra):
    # tracking.wandb left unset: the default (offline) unless WANDB_MODE says otherwise
    ovs = [o for o in tiny_overrides("copy", "gru", out_dir, **{**TINY, **extra}) if o != "tracking.wandb=off"]
    return train_run(build_config({}, ovs), progress=False)


def test_offline_run_mirrors_metrics_csv_at_the_trainer_step(out_dir, offline):
    launch_before = "wandb.sdk.launch" in sys.modules  # another test may have imported it
    r = _run(out_dir, **{"tracking.tags": "[a, b]"})
    recs = finished_records(out_dir, r["run_id"])
    with (out_dir / "runs" / r["run_id"] / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    hist = history(recs)
    assert [h["trainer/global_step"] for h in hist] == [int(row["step"]) for row in rows] == [2, 4, 6]
    for h, row in zip(hist, rows):
        assert h["lr"] == pytest.approx(float(row["lr"])) and h["val/acc"] == pytest.approx(float(row["val/acc"]))
    s = summary(recs)
    assert s["n_params"] == r["n_params"] and s["samples_per_s"] == r["samples_per_s"]
    assert s["baseline/val/acc"] == r["baseline"]["val/acc"] and s["test/acc"] == r["final"]["test/acc"]
    rec = the_run_record(recs)
    assert rec.project == "seqbench" and list(rec.tags) == ["a", "b"]
    assert launch_before or "wandb.sdk.launch" not in sys.modules  # W&B Launch (half a first init) not imported
    config = {i.key: json.loads(i.value_json) for i in rec.config.update}
    assert config["n_params"] == r["n_params"] and config["config_hash"] == r["config_hash"]


def test_wandb_mode_disabled_writes_nothing(out_dir, offline, tmp_path):
    offline.setenv("WANDB_MODE", "disabled")
    offline.setenv("WANDB_DIR", str(tmp_path / "wb"))
    r = _run(out_dir)
    assert r["status"] == "completed"
    assert not (out_dir / "wandb").exists() and not (tmp_path / "wb").exists()
    # a mode the user typed wins over the variable
    r = _run(out_dir, **{"tracking.wandb": "offline"})
    assert offline_run(tmp_path / "wb", r["run_id"])


def test_wandb_dir_moves_the_offline_files(out_dir, offline, tmp_path):
    offline.setenv("WANDB_DIR", str(tmp_path / "elsewhere"))
    r = _run(out_dir)
    assert offline_run(tmp_path / "elsewhere", r["run_id"]) and not (out_dir / "wandb").exists()


def test_wandb_project_and_entity_are_recorded_unless_tracking_project_is_set(out_dir, offline):
    offline.setenv("WANDB_PROJECT", "from-env")
    offline.setenv("WANDB_ENTITY", "my-team")
    r = _run(out_dir)
    rec = the_run_record(finished_records(out_dir, r["run_id"]))
    assert (rec.project, rec.entity) == ("from-env", "my-team")
    r = _run(out_dir, **{"tracking.project": "typed", "seed": 1})
    assert the_run_record(finished_records(out_dir, r["run_id"])).project == "typed"


def test_a_failing_wandb_warns_once_and_training_goes_on(out_dir, offline, capsys):
    import wandb

    def boom(self, *a, **k):
        raise OSError("disk full")

    offline.setattr(wandb.Run, "log", boom)
    r = _run(out_dir)
    err = capsys.readouterr().err
    assert r["status"] == "completed" and r["steps"] == 6
    assert err.count("W&B logging failed") == 1 and "disk full" in err
    saved = json.loads((out_dir / "runs" / r["run_id"] / "results.json").read_text())
    assert saved["final"]["val/acc"] == r["final"]["val/acc"]


def test_sweep_groups_are_unique_per_study_and_storage(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    assert wandb_group("demo", str(a / "optuna.journal")) != wandb_group("demo", str(b / "optuna.journal"))
    assert wandb_group("demo", str(a / "optuna.journal")).startswith("demo-")
    monkeypatch.chdir(tmp_path)  # the same journal named relatively or absolutely: one group
    assert wandb_group("demo", "a/optuna.journal") == wandb_group("demo", str(a / "optuna.journal"))
    assert wandb_group("demo", "journal://a/optuna.journal") == wandb_group("demo", "a/optuna.journal")
    pg = "postgresql://u:***@db/optuna"
    assert wandb_group("demo", pg) != wandb_group("other", pg)


def test_a_sweep_s_runs_carry_the_group_of_their_study_and_storage(tmp_path, monkeypatch):
    import yaml

    from seqbench.bench.cli import main
    from tests.sweeps.test_sweep_runner import write_spec

    monkeypatch.chdir(tmp_path)
    p = write_spec(tmp_path, parameters={"model.name": {"values": ["gru"]}})
    groups = []
    for out in ("a", "b"):  # the same study name in two output folders
        assert main(["sweep", str(p), "--out-dir", out]) == 0
        (cfg,) = (tmp_path / out / "runs").glob("*/config.yaml")
        groups.append(yaml.safe_load(cfg.read_text())["tracking"]["group"])
    assert groups == [wandb_group("tiny", "a/optuna.journal"), wandb_group("tiny", "b/optuna.journal")]
    assert groups[0] != groups[1]


def test_a_run_id_names_the_stack_s_mixer():
    """Issue 39: run ids and progress lines said ``stack`` whatever the mixer; ``runs`` could not tell them apart."""
    from seqbench.bench.training.tracking import default_run_id

    mamba = default_run_id(build_config(["model=stack", "model.mixer=mamba", "seed=3"]))
    plugin = default_run_id(build_config(["model=stack", "model.mixer=tests.probe_plugins:NoMixing"]))
    assert "-stack-mamba-s3-" in mamba and "-stack-NoMixing-s0-" in plugin
    assert "-lstm-s0-" in default_run_id(build_config(["model=lstm"]))
