#!/usr/bin/env bash
# The device side of the GPU check (docs/measuring.md, "On a lent GPU"): unpack the payload the
# earlier runs carried (scripts/gpu/pack.py), then run benchmarks/gpu_check.py with TVM, msviz
# and their dependencies importable. Extra arguments go to gpu_check.py.
#
#   bash scripts/gpu/run_check.sh              # every part here: unpack, then the check
#   bash scripts/gpu/run_check.sh --verify     # only say which parts arrived (a payload run)
#
# The working tree's msviz comes first on PYTHONPATH (the device gets a fresh copy of it each
# run); MSVIZ_FROM_PAYLOAD=1 imports the packed copy instead. Results go to $OUT (the device's
# returned folder) or artifacts/gpu_check.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
PAYLOAD=${GPU_PAYLOAD:-gpu_payload}
SITE="$PAYLOAD/site"
if [ "${1:-}" = "--verify" ]; then
  exec "$PY" scripts/gpu/pack.py verify --payload "$PAYLOAD"
fi
"$PY" scripts/gpu/pack.py unpack --payload "$PAYLOAD" --target "$SITE"
SITE=$(cd "$SITE" && pwd)
if [ "${MSVIZ_FROM_PAYLOAD:-0}" = 1 ]; then
  export PYTHONPATH="$SITE"
else
  export PYTHONPATH="$PWD:$SITE"
fi
# TVM's CUDA runtime (tvm/lib/libtvm_runtime_cuda.so) needs libcudart.so.13 and libcuda.so.1:
# where the loader does not know a libcudart.so.13, take CUDA's or PyTorch's
if ! ldconfig -p 2>/dev/null | grep -q 'libcudart\.so\.13'; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib $("$PY" -c "
import glob, os, site
dirs = {os.path.dirname(p) for s in site.getsitepackages()
        for p in glob.glob(s + '/nvidia/**/libcudart.so.13*', recursive=True)}
print(' '.join(sorted(dirs)))" 2>/dev/null); do
    if ls "$d"/libcudart.so.13* >/dev/null 2>&1; then
      export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      echo "run_check: libcudart.so.13 from $d"
      break
    fi
  done
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L || true
command -v nvcc >/dev/null && nvcc --version | tail -2 || echo "run_check: no nvcc on PATH"
OUTDIR=${OUT:-artifacts/gpu_check}
mkdir -p "$OUTDIR"
exec "$PY" benchmarks/gpu_check.py --out "$OUTDIR" "$@"
