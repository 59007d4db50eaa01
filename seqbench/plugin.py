"""Declaring a plug-in without importing torch: the base classes a plug-in's config subclasses.

A plug-in that points its entry point at its layer class makes seqbench import that class, and torch
with it, at start-up: every ``seqbench list`` and ``--help`` pays for it. Declared instead by a config
class in a module that imports no torch (the split of Hugging Face's ``configuration_*``/``modeling_*``
files), it is registered from the config alone, and its class is imported from the ``implementation``
import path only when a model is built::

    # mypkg/configs.py: no torch here
    from typing import ClassVar

    from pydantic import Field

    from seqbench.plugin import MixerConfig


    class TokenShiftConfig(MixerConfig):
        \"\"\"Token shift: each position mixed with the one `shift` steps back.\"\"\"

        implementation: ClassVar[str] = "mypkg.layers:TokenShift"  # built as TokenShift(d_model, shift=...)
        complexity = ("O(T·d²)", 1)
        shift: int = Field(1, ge=1, description="how far back the mixed position is")

        def forward_macs(self, d_model: int, T: int) -> int:
            return T * 2 * d_model * d_model

and in the plug-in's ``pyproject.toml``::

    [project.entry-points."seqbench.mixers"]
    token_shift = "mypkg.configs:TokenShiftConfig"

The config's fields are the mixer's knobs (``model.mixer_args.shift``), its docstring's first line what
``seqbench list`` shows; ``complexity``, ``needs_positions`` and ``forward_macs`` are ``MixerConfig``'s.
A model declares itself the same way with a ``ModelConfig`` subclass, a task with a ``TaskConfig``
subclass (its ``facts`` too); ``implementation`` names the ``Backbone``, model or ``Task`` class. The
same declaration also works by import path: ``model.mixer=mypkg.configs:TokenShiftConfig``.

The layer itself follows the ``Mixer`` protocol re-exported here (a ``typing.Protocol``, to read and to
type-check against: ``Cls(d_model, *, causal, **knobs)``, ``forward(x, valid=None)``, and what ``causal`` and
``valid`` mean); a layer written before it (no ``causal``, ``forward(x)``) still works.

This module imports no torch (nor do the config modules it re-exports: the protocol names ``torch.Tensor``
in its annotations only); ``docs/plugins.md`` has the contracts, ``seqbench.testing`` the checks for a
plug-in's own CI.
"""

from __future__ import annotations

from seqbench.models.configs.base import ModelConfig
from seqbench.models.configs.mixer import Mixer, MixerConfig
from seqbench.tasks.configs.base import TaskConfig

__all__ = ["Mixer", "MixerConfig", "ModelConfig", "TaskConfig"]
