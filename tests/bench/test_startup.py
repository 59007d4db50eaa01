"""Importing a seqbench module changes nothing; ``start()`` (``bench/startup.py``) is the one start-up step.

In a fresh interpreter with a plug-in package installed (an entry point declaring a mixer, no torch), every
module of the package is imported (pkgutil over each part); then no plug-in is registered, no registry has
a resolver, ``RunConfig``'s unions are unbuilt, and the umask and ``sys.argv`` are as they were. After
``start()`` the plug-in is registered and a config names it. Built-in entries are registered when their
config modules are imported (declarations, as timm's ``@register_model``): this test does not count them.
"""

from __future__ import annotations

import pytest

from tests.bench.plugin_support import drive, install_package

DECLARATIONS = '''
"""A user's declarations: no torch."""
from typing import ClassVar

from seqbench.plugin import MixerConfig


class StillConfig(MixerConfig):
    """Declared without torch, never built here."""

    implementation: ClassVar[str] = "stillpkg.layers:Still"
'''

ENTRY_POINTS = "[seqbench.mixers]\nstill = stillpkg.configs:StillConfig\n"

# the parts the package installs as (pyproject's package-dir); pkgutil walks each one's folder
PARTS = ("seqbench", "seqbench.bench", "seqbench.models", "seqbench.tasks", "seqbench.sweeps", "seqbench.reports")

DRIVER = """
import importlib, json, os, pkgutil, sys

argv, argv_list = list(sys.argv), sys.argv
umask = os.umask(0o022)
os.umask(umask)
umask_calls = []
real_umask = os.umask
os.umask = lambda mask: umask_calls.append(mask) or real_umask(mask)
parts = json.loads(sys.argv[1])

imported = []
for part in parts:
    package = importlib.import_module(part)
    for info in pkgutil.walk_packages(package.__path__, part + "."):
        if info.name.rsplit(".", 1)[-1] != "__main__":  # `python -m`'s entry: it runs the CLI
            importlib.import_module(info.name)
            imported.append(info.name)
os.umask = real_umask
now = os.umask(0o022)
os.umask(now)

from seqbench.bench import plugins
from seqbench.bench.config import RunConfig, build_config
from seqbench.bench.core.registry import MIXERS, MODELS, TASKS
from seqbench.bench.startup import start

regs = (TASKS, MODELS, MIXERS)


def state():
    return {
        "plugins": [e.name for r in regs for e in r if e.origin != "seqbench"],
        "broken": sorted(name for _, name in plugins.BROKEN),
        "resolvers": [r.kind for r in regs if r.resolver is not None],
        "unions_built": RunConfig.__pydantic_complete__,
    }


report = {
    "imported": imported,
    "unwalked": sorted(m for m in sys.modules if m.count(".") == 1 and m.startswith("seqbench.") and m not in parts
                       and hasattr(sys.modules[m], "__path__")),
    "after_import": state(),
    "umask": [umask, now],
    "umask_calls": umask_calls,
    "argv_same": sys.argv is argv_list and sys.argv == argv,
}
start()
report["after_start"] = state()
cfg = build_config(["model=stack", "model.mixer=still", "task=copy"])
report["mixer"] = [cfg.model.mixer, MIXERS.get("still").config_cls.__name__, RunConfig.__pydantic_complete__]
print("REPORT " + json.dumps(report))
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    site = tmp_path_factory.mktemp("startup") / "site"
    install_package(site, "stillpkg", {"configs": DECLARATIONS}, ENTRY_POINTS)
    return drive(DRIVER, [PARTS], site, [site])


def test_every_module_is_imported(report):
    assert len(report["imported"]) > 100 and "seqbench.bench.config" in report["imported"]
    assert report["unwalked"] == []  # a new part of the package belongs in PARTS


def test_importing_every_module_registers_no_plugin_and_builds_no_union(report):
    assert report["after_import"] == {"plugins": [], "broken": [], "resolvers": [], "unions_built": False}


def test_importing_every_module_leaves_umask_and_argv_alone(report):
    assert report["umask"][0] == report["umask"][1]
    assert report["argv_same"]


def test_importing_every_module_never_sets_the_umask(report):
    assert report["umask_calls"] == []


def test_start_registers_the_plugin_and_a_config_names_it(report):
    after = report["after_start"]
    assert after["plugins"] == ["still"] and after["broken"] == []
    assert after["resolvers"] == ["task", "model", "mixer"]
    assert report["mixer"] == ["still", "StillConfig", True]


def test_start_is_idempotent():
    from seqbench.bench.core.registry import MIXERS
    from seqbench.bench.startup import start

    start()
    before = (MIXERS.generation, MIXERS.names())
    start()
    assert (MIXERS.generation, MIXERS.names()) == before
