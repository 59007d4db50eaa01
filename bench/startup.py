"""Start-up: the one step that fills the registries, before any config is composed or validated.

Importing a seqbench module changes nothing outside it: no plug-in is loaded, no hook installed, no config
schema built. ``start()`` does that, once per process, in this order: the shipped packages are imported
(``BUILT_IN``: their config modules declare the shipped tasks, models and mixers with ``@MODELS.config``,
as timm's ``@register_model`` and Hugging Face's auto classes declare theirs), then the entry points of
installed packages are registered and import paths made resolvable (``bench/plugins.py``). ``RunConfig``'s
task and model unions are read from the registries when its schema is first built, which starts up first
(``bench/config/run.py``), so the unions hold the plug-ins whoever builds a config first.

The command line calls ``start()`` for every command that reads configs (``bench/cli.py``); in Python,
``build_config`` and the rest of ``bench.config``'s entries (``validate``, ``compose``, ``RunConfig``
itself) call it, so a notebook needs no set-up line.
"""

from __future__ import annotations

import importlib

from seqbench.bench import plugins

# the packages whose config modules register the shipped entries (no torch: configs only, classes on first use)
BUILT_IN = ("seqbench.tasks", "seqbench.models")
_started = False


def start() -> None:
    """Fill the registries: the shipped entries, then the installed plug-ins. Idempotent: a second call,
    from any entry point, returns at once."""
    global _started
    if _started:
        return
    for package in BUILT_IN:
        importlib.import_module(package)
    plugins.discover()
    _started = True


def started() -> bool:
    """Whether ``start()`` has run in this process."""
    return _started
