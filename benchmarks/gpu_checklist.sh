#!/usr/bin/env bash
# The GPU checklist (../shared/GPU.md) as one script for a lent, offline GPU machine: run from the
# project root with the wheels of `gpu-wheels.sh` in .whl/ (mambapy, scipy and psutil added to its list).
#
#     OUT=/tmp/gpu DEADLINE_S=540 bash benchmarks/gpu_checklist.sh
#
# Every stage writes OUT/<stage>.txt (and the results.json of its runs) and gets what is left of
# DEADLINE_S, capped per stage (ONLY=regex runs just the stages it names), so a slow stage never takes the ones after it down with it. Timing
# stages run one at a time, never beside training. W&B is off (WANDB_MODE=disabled): its package is
# not on the machine and nothing here needs it.
set -uo pipefail
OUT=${OUT:?set OUT to a folder}
DEADLINE_S=${DEADLINE_S:-540}
START=$(date +%s)
export WANDB_MODE=disabled PYTHONDONTWRITEBYTECODE=1
mkdir -p "$OUT"

left() { echo $(( DEADLINE_S - ($(date +%s) - START) )); }
stage() {  # stage NAME CAP_S COMMAND...: run COMMAND under min(CAP_S, time left), output to OUT/NAME.txt
  local name=$1 cap=$2; shift 2
  [[ -n "${ONLY:-}" && ! "$name" =~ ^($ONLY)$ ]] && return
  local t; t=$(left); (( t > cap )) && t=$cap
  if (( t < 15 )); then echo "== $name: skipped, ${t}s left" | tee -a "$OUT/summary.txt"; return; fi
  local s; s=$(date +%s)
  timeout "$t" bash -c '"$@"' _ "$@" > "$OUT/$name.txt" 2>&1; local rc=$?  # bash -c: COMMAND may be a function
  echo "== $name: rc=$rc in $(( $(date +%s) - s ))s (cap ${t}s)" | tee -a "$OUT/summary.txt"
}

# -- setup: the missing packages into the machine's python, seqbench itself as an editable install
python3 -m pip install -q --no-index --no-deps --break-system-packages .whl/*.whl > "$OUT/setup.txt" 2>&1 \
  || python3 -m pip install -q --no-index --no-deps .whl/*.whl >> "$OUT/setup.txt" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . >> "$OUT/setup.txt" 2>&1 \
  || python3 -m pip install -q --no-deps --no-build-isolation -e . >> "$OUT/setup.txt" 2>&1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, pytorch_lightning as pl; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'lightning', pl.__version__)"
  python3 -c "import seqbench.bench.cli; print('seqbench imports')"; nproc; } >> "$OUT/setup.txt" 2>&1
echo "== setup in $(( $(date +%s) - START ))s" | tee -a "$OUT/summary.txt"

# 1. the gpu-marked tests
# (some modules import wandb, absent there, at the top: they have no gpu test, so their collection error is skipped)
# (the flash-linear-attention kernels' first call compiles them with Triton: give it PYTEST_GPU_CAP_S)
stage pytest_gpu ${PYTEST_GPU_CAP_S:-100} python3 -m pytest -q -m gpu -p no:cacheprovider --continue-on-collection-errors \
  --durations=0 tests

# each mixer alone, fwd+bwd, on the GPU (mamba: mambapy's scan where mamba_ssm is not on the machine;
# mamba2 and gated_deltanet: flash-linear-attention's Triton kernels), T 1k-16k
stage mixers 80 python3 benchmarks/mixers.py --device cuda --lengths ${MIXER_LENGTHS:-1024 4096 16384} --batch 8 --repeats 5

# 3. sweep throughput, every worker on cuda:0
stage sweep_throughput 110 python3 benchmarks/sweep_throughput.py --workers ${SWEEP_WORKERS:-1,4,8,16} --trials 16 --steps 40 --devices 0

# 2. harness overhead on the GPU: seqbench vs bare LightningModule vs plain loop
stage overhead_lstm 80 python3 benchmarks/overhead.py --device cuda --model lstm --d-models 64,1024 --steps 150 --rounds 2
stage overhead_transformer 70 python3 benchmarks/overhead.py --device cuda --model transformer --d-models 512 \
  --steps 150 --rounds 2 --set task.delay=20 model.n_layers=4

# where seqbench's step costs more than bare Lightning's: profiler and cProfile differences per step
stage overhead_trace_transformer 60 python3 benchmarks/overhead_trace.py --device cuda --model transformer \
  --d-model 512 --set task.delay=20 model.n_layers=4
stage overhead_trace_lstm 50 python3 benchmarks/overhead_trace.py --device cuda --model lstm --d-model 64
# a GPU sweep worker's own start: a fresh interpreter that imports the training code and initialises CUDA
worker_start() {
  for i in 1 2 3 4 5; do /usr/bin/time -f "import torch + CUDA init: %e s" python3 -c \
    "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"; done
  for i in 1 2 3 4 5; do /usr/bin/time -f "import seqbench's training + CUDA init: %e s" python3 -c \
    "import seqbench.bench.training.train, torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"; done
}
export -f worker_start
stage worker_start 60 worker_start

# 4 + 5. bf16 / compile against fp32 eager on a short run; MFU from the 6-layer d512 T256 LM's results.json
lm() {  # lm NAME OVERRIDES...: a char-LM run (LM_T, LM_BATCH, LM_STEPS: 256, 64, 300), results.json to OUT/runs/NAME.json
  local name=$1; shift
  local steps=${LM_STEPS:-300}
  python3 -m seqbench run task=lm task.length=${LM_T:-256} train.max_steps=$steps train.val_every=$steps \
    train.batch_size=${LM_BATCH:-64} \
    train.threads=4 tracking.wandb=off eval.test=false out_dir=/tmp/gpu-runs run_id="$name" "$@" \
    && mkdir -p "$OUT/runs" && cp "/tmp/gpu-runs/runs/$name/results.json" "$OUT/runs/$name.json" 2>/dev/null \
    || find /tmp/gpu-runs -name results.json -path "*$name*" -exec cp {} "$OUT/runs/$name.json" \;
}
export -f lm
T6="model=transformer model.n_layers=6 model.d_model=512 model.n_heads=8"
L1="model=lstm model.d_model=512"
stage tf_fp32 60 lm tf_fp32 $T6
stage tf_bf16 60 lm tf_bf16 $T6 train.precision=bf16-mixed
stage tf_bf16_compile 150 lm tf_bf16_compile $T6 train.precision=bf16-mixed train.compile=true
stage tf_fp32_compile 150 lm tf_fp32_compile $T6 train.compile=true
stage lstm_fp32 60 lm lstm_fp32 $L1
stage lstm_bf16 60 lm lstm_bf16 $L1 train.precision=bf16-mixed
stage lstm_compile 90 lm lstm_compile $L1 train.compile=true
# bf16 MFU of a Transformer LM large enough to fill the GPU: 12 layers, d 1024, T 1024 x batch 64 = 65k tokens a step
stage lm_mfu 100 env LM_T=1024 LM_BATCH=64 LM_STEPS=60 bash -c 'lm lm_mfu_bf16 model=transformer model.n_layers=12 \
  model.d_model=1024 model.n_heads=16 train.precision=bf16-mixed'

# issue 28: the shipped baseline card, SSM mixers included (hours on a 2-core CPU); only with ONLY=card
if [[ "${ONLY:-}" == *card* ]]; then
  stage card 540 python3 -m seqbench probe model=lstm model=transformer model=tcn model.n_levels=4 model=stack \
    model.mixer=attention,mamba,s4d,linear_attention,hyena --profile quick --workers 16 --name baseline --out-dir /tmp/gpu-card
  mkdir -p "$OUT/card" && cp /tmp/gpu-card/cards/baseline/card.* "$OUT/card/" 2>/dev/null || true
fi

# 6. what is left: one claim's paper profile
stage verify_paper 600 python3 -m seqbench verify vanishing_gradients --profile paper --workers 8 --out-dir /tmp/gpu-verify
cp -r /tmp/gpu-verify/verify "$OUT/verify" 2>/dev/null || true
tar -C "$OUT" -czf "$OUT/../gpu-checklist.tgz" . && mv "$OUT/../gpu-checklist.tgz" "$OUT/"  # one file back
echo "== done in $(( $(date +%s) - START ))s" | tee -a "$OUT/summary.txt"
