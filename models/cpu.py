"""What the mixers do differently on a CPU: small C kernels for their recurrences, and the batch cut into
pieces that keep every tensor of a step small (``batch_pieces``).

C kernels (compiled on first use, called through ctypes): the selective scan of ``models/mamba.py``, the
causal sums of ``models/linear_attention.py``, the SSD recurrence of ``models/mamba2.py`` and the gated
delta rule of ``models/gated_deltanet.py`` (and the short causal convolution with its SiLU that both of those
run first, one pass over the sequence instead of one per tap). Each recurrence's state is small (a Mamba
channel's N numbers, a linear attention head's F x Dv sums, a Mamba-2 or Gated DeltaNet head's P x N or
K x V state) and its per-step work is a few element-wise products or passes over that state: in
PyTorch each step or chunk is dozens of passes over (B, T, ·) or (B, T, E, N)
tensors through main memory; a loop in C keeps the state in registers or the L1 cache and reads every input
once. Each kernel is plain C (no torch headers, so a build takes about a second), vectorised by the
compiler (``#pragma omp simd``, no OpenMP runtime), single-threaded; ``parallel`` splits the batch over
``torch.get_num_threads()`` threads (ctypes releases the GIL during a call).

The build: ``$CC`` or the first of cc, gcc, clang on PATH, ``-O3 -march=native`` (and 512-bit vectors
where the compiler takes the flag; no ``-ffast-math``, so IEEE results up to fused multiply-adds), into
``$XDG_CACHE_HOME/seqbench/kernels`` (default ``~/.cache``; a temporary folder if that is not writable),
named by a hash of the source, the compiler, the flags and the CPU, written under a temporary name and
renamed, so concurrent processes neither race nor load another machine's build. Without a compiler, or
where the build fails, ``load`` returns None once with a warning and the callers run their PyTorch form:
same parameters, same results within float tolerance, slower. ``SEQBENCH_CPU_KERNELS=0`` chooses the
PyTorch forms without trying (as ``benchmarks/mixer_speed.py --no-kernels`` does).

Batch pieces: glibc's malloc serves a request above 32 MiB (its largest mmap threshold) with fresh pages
from the kernel every time, and each page's first write faults: at T = 8192, d_model 64, batch 8 a
(B, T, 2·d) tensor is 32 MiB, and the page faults of such tensors took 25% (Mamba) to 45% (Hyena) of a
step (system time; user time grew linearly), which made the step time grow as T^1.2-1.8 from 4096 to 8192.
Run on pieces of the batch whose tensors stay under ``PIECE_ELEMENTS``, a layer reuses memory malloc
keeps, and its working set stays in the caches; sequences are independent in every mixer, so the result is
the same up to the order in which parameter gradients are summed.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

ENV = "SEQBENCH_CPU_KERNELS"  # "0": never build or load a kernel (the PyTorch forms run)
# Tried in order until one builds: 512-bit vectors where the CPU has them (gcc defaults to 256 on
# AVX-512 parts; the scans ran 2.4x faster with 512), then the host's instruction set, then portable code.
# -ffp-contract=fast: a·b + c as one fused multiply-add wherever it appears (clang's default fuses within one
# expression only; an ISO -std would turn it off).
FLAG_SETS = (
    ("-O3", "-march=native", "-mprefer-vector-width=512", "-fopenmp-simd", "-ffp-contract=fast"),
    ("-O3", "-march=native", "-fopenmp-simd", "-ffp-contract=fast"),
    ("-O3", "-fopenmp-simd"),
    ("-O3",),
)
# What every kernel's source starts with: exp2_float, Cephes' exp2f polynomial on [-0.5, 0.5] (relative
# error < 2e-7, branch-free so that the loops around it vectorise; below 2^-126 it returns ~1e-38, not 0),
# and exp2_double, the C library's.
PRELUDE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float exp2_float(float y) {
    y = y < -126.0f ? -126.0f : y;
    float n = (y + 12582912.0f) - 12582912.0f, f = y - n, p = 1.535336188319500e-4f; /* n = round(y) */
    p = p * f + 1.339887440266574e-3f;
    p = p * f + 9.618437357674640e-3f;
    p = p * f + 5.550332471162809e-2f;
    p = p * f + 2.402264791363012e-1f;
    p = p * f + 6.931472028550421e-1f;
    p = p * f + 1.0f;
    int32_t bits;
    memcpy(&bits, &p, 4);
    bits += (int32_t)n << 23; /* times 2^n */
    memcpy(&p, &bits, 4);
    return p;
}
static inline double exp2_double(double y) { return exp2(y); }

/* The calling thread's floating-point mode (x86 MXCSR, AArch64 FPCR; 0 elsewhere), and setting it (returns
   the old one): ``parallel`` runs a kernel on its pool threads in the mode of the thread that called it. */
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
uint64_t seqbench_fp_mode(void) { return _mm_getcsr(); }
uint64_t seqbench_set_fp_mode(uint64_t mode) {
    const uint64_t old = _mm_getcsr();
    _mm_setcsr((unsigned int)mode);
    return old;
}
#elif defined(__aarch64__)
uint64_t seqbench_fp_mode(void) {
    uint64_t mode;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(mode));
    return mode;
}
uint64_t seqbench_set_fp_mode(uint64_t mode) {
    const uint64_t old = seqbench_fp_mode();
    __asm__ __volatile__("msr fpcr, %0" : : "r"(mode));
    return old;
}
#else
uint64_t seqbench_fp_mode(void) { return 0; }
uint64_t seqbench_set_fp_mode(uint64_t mode) { return mode; }
#endif
"""
DTYPES = {torch.float32: "float", torch.float64: "double"}  # the dtypes a kernel is instantiated for


def instantiate(body: str, defines: str = "") -> str:
    """A kernel's whole source: ``PRELUDE``, ``defines``, then ``body`` (C written over the type name REAL,
    and functions named ``..._REAL``) once per type in ``DTYPES``."""
    return PRELUDE + defines + "".join(body.replace("REAL", real) for real in DTYPES.values())


_lock = threading.Lock()


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def _compiler() -> str | None:
    return os.environ.get("CC") or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)


def _cpu() -> str:
    """What ``-march=native`` compiles for: the CPU's model and feature flags (Linux), else the platform."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return "".join(line for line in lines if line.startswith(("model name", "flags", "Features")))[:4000]
    except OSError:
        return platform.processor() + platform.machine()


def _cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "seqbench" / "kernels"
    try:
        root.mkdir(parents=True, exist_ok=True)
        if os.access(root, os.W_OK):
            return root
    except OSError:
        pass
    root = Path(tempfile.gettempdir()) / f"seqbench-kernels-{os.getuid() if hasattr(os, 'getuid') else 0}"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _build(name: str, source: str, cc: str) -> Path:
    """The library built from ``source`` with the first flag set that compiles (cached), or an OSError."""
    errors = []
    for flags in FLAG_SETS:
        key = hashlib.sha256("\0".join([source, cc, *flags, _cpu(), platform.machine()]).encode()).hexdigest()[:16]
        lib = _cache_dir() / f"{name}-{key}.so"
        if lib.exists():
            return lib
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / f"{name}.c", Path(tmp) / f"{name}.so"
            src.write_text(source)
            cmd = [cc, *flags, "-shared", "-fPIC", "-o", str(out), str(src), "-lm"]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if done.returncode == 0:
                staged = lib.with_name(f"{lib.name}.{os.getpid()}.tmp")
                shutil.copyfile(out, staged)
                os.replace(staged, lib)  # atomic: a concurrent build of the same key writes the same bytes
                return lib
            errors.append(f"{' '.join(flags)}: {done.stderr.strip()[-500:]}")
    raise OSError("; ".join(errors))


def load(name: str, source: str) -> ctypes.CDLL | None:
    """The kernel library ``name`` built from the C ``source`` (cached across processes), or None where it
    cannot be built or loaded here (warned once) or while ``SEQBENCH_CPU_KERNELS=0``."""
    return _load(name, source) if enabled() else None


@functools.cache
def _load(name: str, source: str) -> ctypes.CDLL | None:
    cc = _compiler()
    if cc is None:
        warnings.warn(f"no C compiler (set CC): the {name} kernel runs in its slower PyTorch form", stacklevel=2)
        return None
    try:
        with _lock:
            lib = ctypes.CDLL(str(_build(name, source, cc)))
    except (OSError, subprocess.SubprocessError) as e:
        warnings.warn(f"the {name} kernel did not build ({e}); its slower PyTorch form runs", stacklevel=2)
        return None
    lib.seqbench_fp_mode.restype = lib.seqbench_set_fp_mode.restype = ctypes.c_uint64
    lib.seqbench_fp_mode.argtypes, lib.seqbench_set_fp_mode.argtypes = [], [ctypes.c_uint64]
    return lib


CHECKPOINT_NUMBERS = 1 << 17  # numbers in a kernel backward's buffer of one chunk's states (512 KiB of float32: L2)


def checkpoint_steps(state_numbers: int) -> int:
    """Steps between a recurrence kernel's checkpoints, so that its backward's buffer of one chunk's states
    (``state_numbers`` a step) stays within ``CHECKPOINT_NUMBERS``: between 1 and 64 steps."""
    return max(1, min(64, CHECKPOINT_NUMBERS // max(1, state_numbers)))


def choose(name: str, source: str, x: torch.Tensor, kernel: bool | None) -> ctypes.CDLL | None:
    """The kernel library a mixer's function runs for input ``x``: ``kernel`` True demands it (a RuntimeError
    where it cannot run: not a float32 or float64 CPU tensor, or no build), False refuses it (None: the PyTorch
    form), None takes it wherever it runs."""
    takes = x.device.type == "cpu" and x.dtype in DTYPES
    lib = load(name, source) if takes and kernel is not False else None
    if kernel and lib is None:
        raise RuntimeError(f"the {name} kernel takes float32 or float64 CPU tensors where it builds; pass kernel=None")
    return lib


def call(fn: Callable[..., None], *args: int | torch.Tensor) -> None:
    """``fn(*args)`` with each int passed as an int64_t and each tensor (contiguous, on the CPU) as a pointer
    to its data: the kernels' only argument types."""
    fn(*(ctypes.c_void_p(a.data_ptr()) if isinstance(a, torch.Tensor) else ctypes.c_int64(a) for a in args))


@functools.cache
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="seqbench-kernel")


def slots(batch: int) -> int:
    """How many threads ``parallel`` uses for a batch: torch's intra-op threads, at most one per sequence."""
    return max(1, min(batch, torch.get_num_threads()))


def parallel(batch: int, run: Callable[[int, int, int], None], lib: ctypes.CDLL) -> None:
    """``run(b0, b1, slot)`` over ``slots(batch)`` contiguous slices of the batch, each on its own thread
    (the caller's own thread alone when there is one): a kernel call per slice, ``slot`` picking that
    slice's scratch and partial sums.

    A pool thread runs its slice in the caller's floating-point mode (read and set by ``lib``, a library
    ``load`` returned), then gets its own back: ``train.flush_denormal`` sets the calling thread's mode, and a
    pool thread otherwise keeps the mode it was created with (a run after a change of the setting in the same
    process, a notebook, ran with the pool's first mode). It matters because a recurrence whose adjoint
    decays through positions without a loss (Mamba's scan on selective copying) reaches denormal floats, each
    a slow microcode path on x86: a layer's scan backward at batch 32, T 260, d_model 32 took 55 ms with them
    and 15 ms flushed (one thread, Nov 28 2026)."""
    n = slots(batch)
    bounds = [batch * i // n for i in range(n + 1)]
    if n == 1:
        run(0, batch, 0)
        return
    mode = lib.seqbench_fp_mode()

    def in_mode(i: int) -> None:
        old = lib.seqbench_set_fp_mode(mode)
        try:
            run(bounds[i], bounds[i + 1], i)
        finally:
            lib.seqbench_set_fp_mode(old)

    futures = [_pool(n).submit(in_mode, i) for i in range(n)]
    for f in futures:
        f.result()


PIECE_ELEMENTS = 1 << 21  # numbers in the widest tensor of one piece (8 MiB of float32: far below 32 MiB)


def batch_pieces(x: torch.Tensor, width: int) -> list[torch.Tensor]:
    """``x`` (B, T, ·) split along the batch so that a tensor of ``width`` numbers per position stays within
    ``PIECE_ELEMENTS`` for each piece (at least one sequence, and at least one per thread so ``parallel``
    keeps its threads busy); the whole batch, in one piece, off the CPU or where it fits."""
    B, T = x.shape[:2]
    rows = max(1, PIECE_ELEMENTS // max(1, T * width), torch.get_num_threads())
    return [x] if rows >= B or x.device.type != "cpu" else list(x.split(rows))
