"""No secret in any output: with ``WANDB_API_KEY`` set and a storage URL with a password, a sweep
(W&B offline, so its files are written too) and its report leave neither in any file under
out_dir, in the terminal output, or in the study's and trials' attributes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml

from seqbench.bench.core.text import redact
from seqbench.sweeps.optuna_adapter import storage_of, study_id
from seqbench.sweeps.storage import open_storage
from tests.helpers import REPO
from tests.pg_server import postgres_or_skip
from tests.sweeps.test_sweep_runner import TINY_BASE

KEY = "f4k3seqbenchAPIkey0123456789abcdef012345"  # 40 characters, like a real W&B key
PASSWORD = "S3cretPW-seqbench-7q"


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m bench ARGS`` with the fake key in the environment and W&B free to run offline."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    e.update({"PYTHONPATH": str(REPO), "WANDB_API_KEY": KEY, **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "seqbench", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, env=e
    )


def write_spec(tmp_path: Path) -> Path:
    base = {**TINY_BASE, "tracking": {"wandb": "offline"}}
    spec = {
        "question": "are secrets kept?",
        "base": base,
        "metric": {"name": "val/acc", "goal": "maximize"},
        "parameters": {"model.name": {"values": ["rnn", "gru"]}},
    }
    p = tmp_path / "secret.yaml"
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    return p


def leaks(out: Path, texts: list[str], study: optuna.Study, secrets: list[str]) -> list[str]:
    """Where each secret shows up: files under ``out`` (bytes), captured output, study/trial attrs."""
    run_ids = [r for t in study.get_trials() for r in t.user_attrs["run_ids"]]
    logs = [p.read_bytes() for p in out.glob("wandb/*/*.wandb")]
    assert logs and all(any(r.encode() in b for b in logs) for r in run_ids)  # the grep sees W&B's plain text
    found = []
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for p in files:
        data = p.read_bytes()
        found += [f"{p.relative_to(out)}: {s}" for s in secrets if s.encode() in data]
    for i, text in enumerate(texts):
        found += [f"output {i}: {s}" for s in secrets if s in text]
    attrs = [study.user_attrs, storage_of(study).get_study_system_attrs(study_id(study))] + [
        a for t in study.get_trials() for a in (t.user_attrs, t.system_attrs)
    ]
    blob = json.dumps(attrs, default=str)
    found += [f"study/trial attrs: {s}" for s in secrets if s in blob]
    return found


@pytest.mark.slow  # W&B offline in two worker processes, then a report: ~35 s
def test_journal_sweep_with_wandb_offline_and_report_leak_no_key(tmp_path):
    out = tmp_path / "out"
    spec = write_spec(tmp_path)
    sweep = cli("sweep", str(spec), "--out-dir", str(out), "--workers", "2")
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr
    report = cli("report", "secret", "--out-dir", str(out))
    assert report.returncode == 0, report.stdout + report.stderr
    assert list((out / "wandb").rglob("*.wandb")), "W&B offline wrote no run files: the check would be empty"
    assert list((out / "reports" / "secret").glob("*.html"))
    study = optuna.load_study(study_name="secret", storage=open_storage(None, out))
    texts = [sweep.stdout, sweep.stderr, report.stdout, report.stderr]
    assert leaks(out, texts, study, [KEY]) == []


@pytest.fixture(scope="module")
def secret_pg_url():
    """A real ``postgresql://user:PASSWORD@127.0.0.1:port/db``: a user created with that password."""
    with postgres_or_skip() as admin:
        import psycopg2  # present: postgres_or_skip skipped otherwise

        conn = psycopg2.connect(admin)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f"CREATE USER sbuser WITH PASSWORD '{PASSWORD}'")
            cur.execute("CREATE DATABASE sbdb OWNER sbuser")
        conn.close()
        host = admin.split("@", 1)[1].rsplit("/", 1)[0]
        yield f"postgresql://sbuser:{PASSWORD}@{host}/sbdb"


@pytest.mark.slow  # a PostgreSQL server and W&B offline runs in worker processes
def test_postgres_password_and_key_never_leak(tmp_path, secret_pg_url):
    out = tmp_path / "out"
    spec = write_spec(tmp_path)
    url = secret_pg_url
    sweep = cli("sweep", str(spec), "--out-dir", str(out), "--storage", url, "--workers", "2")
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr
    rerun = cli("sweep", str(spec), "--out-dir", str(out), "--storage", url)  # in-process worker this time
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    report = cli("report", "secret", "--storage", url, "--out-dir", str(out))
    assert report.returncode == 0, report.stdout + report.stderr
    bad = cli("sweep", str(spec), "--out-dir", str(out), "--storage", url.replace("/sbdb", "/nosuchdb"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    study = optuna.load_study(study_name="secret", storage=open_storage(url))
    assert len(study.get_trials()) == 2
    texts = [p.stdout + p.stderr for p in (sweep, rerun, report, bad)]
    assert leaks(out, texts, study, [KEY, PASSWORD]) == []
    shown = redact(url)
    assert shown.startswith("postgresql://sbuser:***@") and shown in sweep.stdout  # shown, redacted
    assert "sbuser:***@" in bad.stderr
    assert list((out / "wandb").rglob("*.wandb"))


def test_worker_processes_do_not_carry_the_storage_url_on_their_command_line(tmp_path, monkeypatch):
    """``ps`` shows every user a process's arguments: the job (with its storage URL) goes by environment."""
    import seqbench.sweeps.processes as runner

    seen = []

    class FakePopen:
        def __init__(self, args, env=None, **kw):
            seen.append((list(args), dict(env or {})))
            self.pid = 2**22 + len(seen)  # above Linux's largest pid_max: no process a stop reaches

        def wait(self):
            return 0

    monkeypatch.setattr(runner.subprocess, "Popen", FakePopen)
    job = runner.Job(
        spec={},
        spec_path="x.yaml",
        study="s",
        storage=f"postgresql://u:{PASSWORD}@h/db",
        out_dir=str(tmp_path),
        argv=["seqbench", "sweep", "--storage", f"postgresql://u:{PASSWORD}@h/db"],
    )
    assert runner.exec_workers(job, [None, None]) == 0  # forked workers (CPU) have no command line at all
    assert len(seen) == 2
    for args, env in seen:
        assert PASSWORD not in " ".join(args)
        assert runner.Job(**json.loads(env[runner.JOB_ENV])).storage == job.storage
