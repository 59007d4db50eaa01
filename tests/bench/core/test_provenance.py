"""Provenance: a git SHA only for a git checkout of seqbench itself, else the installed version."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from seqbench.bench.core import provenance

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
OURS = '[project]\nname = "seqbench"\nversion = "0.1.0"\n'


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def repo(path: Path, pyproject: str | None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", cwd=path)
    if pyproject is not None:
        (path / "pyproject.toml").write_text(pyproject)
    return path


def commit(path: Path) -> str:
    git("add", "-A", cwd=path)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c", cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


def test_sha_of_a_seqbench_checkout_with_dirty_flag(tmp_path):
    root = repo(tmp_path / "seqbench", OURS)
    sha = commit(root)
    assert provenance.checkout_root(root) == root and provenance.git_sha(root) == sha
    (root / "pyproject.toml").write_text(OURS + "# edited\n")
    assert provenance.git_sha(root) == sha + "+dirty"


def test_a_registration_appended_by_verify_does_not_mark_the_code_dirty(tmp_path):
    """verify writes sweeps/claims/registry.yaml before its runs start: not code, so not "+dirty"; a claim
    file or any other tracked file beside it still is."""
    root = repo(tmp_path / "seqbench", OURS)
    claims = root / "sweeps" / "claims"
    claims.mkdir(parents=True)
    (claims / "registry.yaml").write_text("registrations: []\n")
    (claims / "a_claim.yaml").write_text("question: q\n")
    sha = commit(root)
    (claims / "registry.yaml").write_text("registrations: [{claim: a_claim}]\n")
    assert provenance.git_sha(root) == sha
    (claims / "a_claim.yaml").write_text("question: another\n")
    assert provenance.git_sha(root) == sha + "+dirty"


def test_no_sha_inside_someone_elses_repository(tmp_path):
    """site-packages in a project's venv sits inside that project's git tree: its commit is not ours."""
    outer = repo(tmp_path / "project", '[project]\nname = "my-research"\n')
    installed = outer / ".venv" / "lib" / "site-packages" / "seqbench"
    installed.mkdir(parents=True)
    (installed / "pyproject.toml").write_text(OURS)  # even a stray seqbench pyproject below the top
    commit(outer)
    assert provenance.git_sha(installed) is None and provenance.git_sha(outer) is None


def test_no_sha_outside_git(tmp_path):
    (tmp_path / "pyproject.toml").write_text(OURS)
    assert provenance.checkout_root(tmp_path) is None and provenance.git_sha(tmp_path) is None
    assert provenance.versions()["seqbench"] == provenance.package_version()


def test_the_default_source_root_is_the_project_root_that_holds_pyproject():
    """SOURCE_ROOT must follow the file when it moves (bench/core/ since the floors): one level short, every
    run of a checkout recorded no commit."""
    root = Path(provenance.__file__).resolve().parents[2]
    assert provenance.SOURCE_ROOT == root and (root / "pyproject.toml").is_file()
    assert provenance._OUR_NAME.search((root / "pyproject.toml").read_text())
    if (root / ".git").exists():  # a checkout (CI clones one): the commit is recorded
        assert provenance.checkout_root() == root and provenance.git_sha()


def test_the_checkouts_own_commit_is_read_once_per_process(monkeypatch):
    first = provenance.git_sha()
    monkeypatch.setattr(provenance, "_read_sha", lambda root: "a later HEAD")
    assert provenance.git_sha() == first  # kept: the code this process runs
    assert provenance.git_sha(Path("/nonexistent")) == "a later HEAD"  # any other root is read each time
