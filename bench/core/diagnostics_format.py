"""The ``diagnostics.json`` file format: one typed definition that the writer
(``bench.training.diagnostics.GradientDiagnostics``) and every reader (``reports.diagnostics``) share.

No torch here, so a report can read the file without importing the training stack. The file is::

    {"format": 1,
     "definitions": {"through_time": "...", ...},          # what each quantity means, in words
     "records": [                                          # step 0, then every diagnostics.every steps
       {"step": 0, "loss": 1.38, "global_grad_norm": 2.1,
        "layer_grad_norm": {"encoder.embed": 0.3, "backbone.rnn.l0": 1.9, "head": 0.8},
        "w_hh_spectral_norm": {"backbone.rnn.weight_hh_l0": 1.02},
        "through_time": {"distance": [0, 1, ...], "grad_norm": [...], "count": [...],
                         "by_position": [...]}},            # absent for models without one backbone input
       ...]}

Numbers may be NaN or infinite (a diverging run); the file is written and read with the json
module, which keeps them (``NaN``, ``Infinity``), rather than turning them into nulls.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

FORMAT = 1
FILENAME = "diagnostics.json"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ThroughTime(_Frozen):
    """||dL/dx_t|| aggregated by distance from the loss positions (see ``definitions``)."""

    distance: list[int] = Field(description="distances that occur, ascending")
    grad_norm: list[float] = Field(description="mean ||dL/dx_t|| over (sequence, position) pairs at each distance")
    count: list[int] = Field(description="how many (sequence, position) pairs each mean is over")
    by_position: list[float] = Field(description="mean over the batch of ||dL/dx_t|| at each position t")

    @model_validator(mode="after")
    def _aligned(self) -> ThroughTime:
        if not len(self.distance) == len(self.grad_norm) == len(self.count):
            raise ValueError(
                f"through_time: distance, grad_norm and count differ in length "
                f"({len(self.distance)}, {len(self.grad_norm)}, {len(self.count)})"
            )
        return self

    def decay_rate(self, min_distance: int = 1) -> float:
        """Fitted decay of ||dL/dx_t|| per step of distance: minus the least-squares slope of
        ln(grad_norm) against distance over distances >= ``min_distance`` (distance 0 is the head's
        local gradient, not a path through time). exp(-rate) is the factor kept per step; NaN with
        fewer than two usable points."""
        pts = [
            (d, math.log(g))
            for d, g in zip(self.distance, self.grad_norm)
            if d >= min_distance and g > 0 and math.isfinite(g)
        ]
        if len(pts) < 2:
            return math.nan
        mx = sum(d for d, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        den = sum((d - mx) ** 2 for d, _ in pts)
        return -sum((d - mx) * (y - my) for d, y in pts) / den if den else math.nan


class Record(_Frozen):
    """What one record step measured."""

    step: int = Field(ge=0, description="optimizer step (global_step) the gradients belong to")
    loss: float | None = Field(None, description="training loss of the step's batch")
    global_grad_norm: float = Field(description="L2 norm of all gradients before clipping")
    layer_grad_norm: dict[str, float] = Field(description="layer group -> gradient L2 norm, network order")
    w_hh_spectral_norm: dict[str, float] = Field(description="weight_hh_l<k> parameter -> largest singular value")
    through_time: ThroughTime | None = Field(None, description="absent when the model has no single backbone input")


class DiagnosticsFile(_Frozen):
    format: int = Field(FORMAT, description="format version of this file")
    definitions: dict[str, str] = Field(default_factory=dict, description="quantity -> its definition in words")
    records: list[Record] = Field(default_factory=list, description="one per record step, ascending")

    def to_text(self) -> str:
        return json.dumps(self.model_dump(mode="python")) + "\n"


class DiagnosticsFormatError(ValueError):
    """A diagnostics.json that is not this format (one line: the file and the first problem)."""


def parse_diagnostics(text: str, source: str = FILENAME) -> DiagnosticsFile:
    try:
        data = json.loads(text)
        if isinstance(data, dict) and data.get("format", FORMAT) != FORMAT:
            raise DiagnosticsFormatError(f"{source}: format {data.get('format')!r}, this seqbench reads {FORMAT}")
        return DiagnosticsFile.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise DiagnosticsFormatError(f"{source}: {where}: {err['msg']}") from None
    except ValueError as e:
        if isinstance(e, DiagnosticsFormatError):
            raise
        raise DiagnosticsFormatError(f"{source}: not JSON ({e})") from None


def read_diagnostics(path: Path | str) -> DiagnosticsFile:
    """The file at ``path`` (a run folder or the file itself); DiagnosticsFormatError if it is not this format."""
    p = Path(path)
    if p.is_dir():
        p = p / FILENAME
    return parse_diagnostics(p.read_text(), source=str(p))
