#!/usr/bin/env bash
# Installs PyTorch from PyPI into the project's venv (.venv/, made by install-python-deps.sh;
# GLOO_LITE_VENV=... for another), for the torch.distributed backend (bindings/torch/) and its
# tests. A step of its own because torch is large (the PyPI wheel brings its CUDA libraries,
# about 5 GB unpacked; they load on a machine without a GPU and stay unused): pip's cache keeps
# the downloads, and a venv that already imports torch is left alone, so a second run takes
# seconds. GLOO_LITE_TORCH=torch==2.x.y pins a version; GLOO_LITE_SKIP_TORCH=1 skips the step
# (the backend and its tests are then left out of the build, and say so). expecttest comes
# along: torch's own distributed test suite (test/torch/torch_suite/) imports it.
set -euo pipefail
scripts=$(cd "$(dirname "$0")" && pwd)
cd "$scripts/.."

if [ "${GLOO_LITE_SKIP_TORCH:-0}" = 1 ]; then
  echo "install-torch: skipped (GLOO_LITE_SKIP_TORCH=1)"
  exit 0
fi
venv=${GLOO_LITE_VENV:-.venv}
requirement=${GLOO_LITE_TORCH:-torch}
extras=(expecttest)
stamp="$venv/.gloo_lite-torch"
"$scripts/install-python-deps.sh"

if [ "$(cat "$stamp" 2> /dev/null)" = "$requirement ${extras[*]}" ] &&
  "$venv/bin/python3" -c "import torch.distributed, expecttest" 2> /dev/null; then
  echo "install-torch: $venv has torch $("$venv/bin/python3" -c 'import torch; print(torch.__version__)')"
  exit 0
fi
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "$requirement" "${extras[@]}"
"$venv/bin/python3" -c "import torch.distributed as d; assert d.is_available() and d.is_gloo_available()"
echo "$requirement ${extras[*]}" > "$stamp"
echo "install-torch: $venv ready (torch $("$venv/bin/python3" -c 'import torch; print(torch.__version__)' 2> /dev/null))"
