#!/usr/bin/env bash
# GPU check for ordcore (issue 8): the GPU test suite plus the throughput table, in under
# 5 minutes on one H200. Run from anywhere on a CUDA machine with CuPy:
#
#     bash benches/gpu_check.sh            # PYTHON=python3.12 to pick the interpreter
#
# ordcore's compiled core is taken, in this order, from: an importable ordcore
# (pip install -e . / maturin develop), a wheel for this interpreter in dist/ (build it
# where Rust is, e.g. `maturin build --release -i python3.12 -o dist`, and carry dist/),
# or a fresh `maturin build` when cargo and maturin are present. The Python sources always
# come from this checkout. Output: the pytest summary, the table, bench-results/gpu_throughput.json
# (copied to $OUT when that is set).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
PY=${PYTHON:-python3}
stage=$(mktemp -d /tmp/ordcore-gpu-check.XXXX)
trap 'rm -rf "$stage"' EXIT
say() { printf '\n=== %s (%ss) ===\n' "$1" "$SECONDS"; }

say "environment"
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not available"
"$PY" - <<'PYEOF'
import platform, sys
print("python", platform.python_version(), sys.executable)
try:
    import cupy
    print("cupy", cupy.__version__, "devices:", cupy.cuda.runtime.getDeviceCount())
except Exception as e:  # noqa: BLE001
    sys.exit(f"CuPy with a CUDA device is needed for the GPU check: {e}")
PYEOF

say "ordcore core extension"
tag=$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
so=""
if so=$(cd /tmp && "$PY" -c 'import ordcore._core as c; print(c.__file__)' 2>/dev/null); then
  echo "using the installed core: $so"
else
  so=""
  whl=$(ls -t "$root"/dist/ordcore-*-"$tag"-*.whl 2>/dev/null | head -n 1 || true)
  if [ -z "$whl" ] && command -v cargo >/dev/null && "$PY" -m maturin --version >/dev/null 2>&1; then
    echo "building a wheel with maturin"
    "$PY" -m maturin build --release -i "$PY" -o "$stage/dist" >/dev/null
    whl=$(ls "$stage"/dist/ordcore-*.whl | head -n 1)
  fi
  [ -n "$whl" ] || { echo "no ordcore core for $tag: install ordcore, or put a $tag wheel in dist/"; exit 1; }
  echo "using the core of $whl"
  mkdir -p "$stage/whl"
  "$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$stage/whl"
  so=$(ls "$stage"/whl/ordcore/_core*.so | head -n 1)
fi
mkdir -p "$stage/site"
cp -r "$root/python/ordcore" "$stage/site/ordcore"
cp "$so" "$stage/site/ordcore/"
export PYTHONPATH="$stage/site${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c 'import ordcore, ordcore.gpu as g; print("ordcore", ordcore.__version__, "from", ordcore.__file__, "gpu available:", g.is_available())'

say "GPU test suite: pytest -m gpu"
status=0
# third-party deprecation warnings are shown, not turned into errors, on this machine
timeout 170 "$PY" -m pytest tests/test_gpu.py -m gpu -q -p no:cacheprovider \
  -W "default::DeprecationWarning" -W "default::FutureWarning" || status=$?

say "throughput table"
timeout 100 "$PY" benches/gpu_throughput.py ${GPU_CHECK_QUICK:+--quick} || status=$((status ? status : $?))

say "done (exit $status)"
exit "$status"
