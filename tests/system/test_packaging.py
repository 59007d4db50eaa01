"""The built wheel, installed into a fresh venv, works from a folder with its own ``models/`` and
``tasks/`` packages (the first thing a researcher with an existing project tries), and installs
nothing but ``seqbench`` at top level.

The venv reuses this interpreter's installed dependencies through ``.pth`` lines (torch is
gigabytes; the point is the wheel, not the dependency resolver). A directory added by a ``.pth``
line is not itself scanned for ``.pth`` files, so the editable install of this checkout stays
inactive there: the venv sees only the wheel's seqbench.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.slow

_NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "outputs",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    "wandb",
    "lightning_logs",
)
HOSTILE = "raise ImportError('the user project package was imported instead of seqbench\\'s')\n"


def sh(cmd: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(cmd, cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel built from this checkout; returns its bin folder."""
    tmp = tmp_path_factory.mktemp("pkg")
    src = tmp / "src"  # a copy, so the build leaves nothing in the checkout (and sees no stale build/)
    shutil.copytree(REPO, src, ignore=_NOT_SOURCE)
    p = sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(tmp / "wheels")], tmp)
    assert p.returncode == 0, p.stderr[-3000:]
    (wheel,) = (tmp / "wheels").glob("seqbench-*.whl")
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=False)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / "python"
    site = Path(sh([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp).stdout.strip())
    # every site-packages this interpreter sees (a venv may chain to another through a .pth of its own)
    deps = [d for d in sys.path if Path(d).name in ("site-packages", "dist-packages")]
    (site / "_seqbench_test_deps.pth").write_text("\n".join(deps) + "\n")
    p = sh([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)], tmp)
    assert p.returncode == 0, p.stderr[-3000:]
    return bindir


@pytest.fixture
def project(tmp_path) -> Path:
    """A researcher's project folder: its own models/ and tasks/ packages that must never be imported."""
    for name in ("models", "tasks", "bench"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(HOSTILE)
    return tmp_path


def test_only_seqbench_is_importable_at_top_level(installed, tmp_path):
    neutral = tmp_path / "neutral"
    neutral.mkdir()
    for name in ("bench", "models", "tasks", "sweeps", "reports"):
        p = sh([str(installed / "python"), "-c", f"import {name}"], neutral)
        assert p.returncode != 0 and f"No module named '{name}'" in p.stderr, (name, p.stderr[-500:])
    p = sh([str(installed / "python"), "-c", "import seqbench.bench.cli as c, seqbench; print(c.__file__)"], neutral)
    assert p.returncode == 0 and "site-packages" in p.stdout and str(REPO) not in p.stdout, p.stdout + p.stderr


def test_list_and_a_run_from_a_folder_with_its_own_models_and_tasks(installed, project):
    p = sh([str(installed / "seqbench"), "list"], project)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "lstm" in p.stdout and "copy" in p.stdout and "demo" in p.stdout  # the shipped sweep, by name
    # `python -m` puts the cwd first on sys.path: the strongest test that the user's packages stay out
    run = [
        str(installed / "python"),
        "-m",
        "seqbench",
        "run",
        "task=copy",
        "model=lstm",
        "task.delay=4",
        "task.n_symbols=2",
        "model.d_model=16",
        "train.max_steps=20",
        "train.val_every=10",
        "train.batch_size=8",
        "eval.test_batches=1",
        "tracking.wandb=off",
        "out_dir=out",
    ]
    p = sh(run, project)
    assert p.returncode == 0, p.stderr[-3000:]
    (results,) = (project / "out" / "runs").glob("*/results.json")
    assert '"status": "completed"' in results.read_text() and '"steps": 20' in results.read_text()
