"""Sweep specs (YAML shipped in this folder) and the Optuna runner."""
from __future__ import annotations

from pathlib import Path

SWEEPS_DIR = Path(__file__).resolve().parent


def shipped_sweeps() -> list[tuple[str, str]]:
    """(path relative to the repo, the question from its `question:` key) for each shipped spec."""
    out = []
    for p in sorted(SWEEPS_DIR.glob("*.yaml")):
        question = ""
        for line in p.read_text().splitlines():
            if line.startswith("question:"):
                question = line.split(":", 1)[1].strip().strip("\"'")
                break
        out.append((f"sweeps/{p.name}", question))
    return out
