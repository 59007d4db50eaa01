"""A throwaway PostgreSQL server for tests: the Debian binaries, a temp dir, a free loopback port.

``SEQBENCH_TEST_POSTGRES_URL`` points the tests at an existing server instead. Without either,
the tests that need one skip and say how to get one (``apt-get install -y postgresql``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

INSTALL_HINT = "apt-get install -y postgresql (Debian) provides initdb/pg_ctl"


class NoServer(Exception):
    """No PostgreSQL server can be started here; the message says why."""


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise NoServer(f"no PostgreSQL server binaries (initdb); {INSTALL_HINT}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres_url() -> Iterator[str]:
    """Yield a ``postgresql://`` URL of a running server (started here and stopped after)."""
    if os.environ.get("SEQBENCH_TEST_POSTGRES_URL"):
        yield os.environ["SEQBENCH_TEST_POSTGRES_URL"]
        return
    bindir = _bin_dir()
    as_user: list[str] = []
    root = tempfile.mkdtemp(prefix="seqbench-pg-")
    try:
        if os.geteuid() == 0:  # the server refuses to run as root
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise NoServer("running as root and there is no 'postgres' user to start the server as") from None
            runuser = shutil.which("runuser")
            if runuser is None:
                raise NoServer("running as root and runuser is missing")
            os.chown(root, user.pw_uid, user.pw_gid)
            as_user = [runuser, "-u", "postgres", "--"]
        data, port = Path(root) / "data", _free_port()

        def call(*cmd: str, timeout: float = 120) -> None:
            r = subprocess.run([*as_user, *cmd], capture_output=True, text=True, timeout=timeout)
            if r.returncode != 0:
                tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or [""]
                raise NoServer(f"{Path(cmd[0]).name} failed: {tail[0]}")

        call(str(bindir / "initdb"), "-D", str(data), "-U", "seqbench", "--auth=trust", "-E", "UTF8", "--no-sync")
        call(
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(Path(root) / "log"),
            "-w",
            "-t",
            "60",
            "start",
            "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100",
        )
        try:
            yield f"postgresql://seqbench@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(
                [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True,
                timeout=60,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def postgres_or_skip() -> Iterator[str]:
    """``postgres_url()`` for tests: skips (saying why) without psycopg2 or when no server can start."""
    import pytest

    try:
        import psycopg2  # noqa: F401
    except ImportError:
        pytest.skip("psycopg2 is not installed (pip install -e '.[dev]')")
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(postgres_url())
        except NoServer as e:
            pytest.skip(f"no PostgreSQL server could be started: {e}")
        yield url
