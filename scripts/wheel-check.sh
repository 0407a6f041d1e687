#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, then use the installed module from outside
# the repository: import it, and run an allreduce on 2 ranks through the console script
# gloo_lite_run that the wheel puts on PATH, and through `python -m gloo_lite.run`. This is how
# a user meets the module; CI runs it as its own stage (the build takes a few minutes).
# When the project's venv has torch (scripts/install-torch.sh), the fresh venv sees that torch
# through a .pth file instead of a 5 GB reinstall, the wheel builds its torch backend against
# it, and the check also trains examples/ddp.py under torchrun with backend="gloo_lite" found
# through the entry point alone.
# WHEEL_VENV=... keeps the venv (default: a temporary directory, removed afterwards).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
venv=${WHEEL_VENV:-$work/venv}
python=${PYTHON:-python3}

"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
torch_venv=${WHEEL_TORCH_VENV:-$repo/.venv}
with_torch=0
if [ -x "$torch_venv/bin/python3" ] && "$torch_venv/bin/python3" -c "import torch" 2> /dev/null; then
  with_torch=1
  "$torch_venv/bin/python3" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
    > "$("$venv/bin/python3" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/project-torch.pth"
fi
# CMAKE_BUILD_PARALLEL_LEVEL: the machines have 2 cores.
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} "$venv/bin/pip" install --quiet "$repo"

cd "$work"  # away from the repository: the installed package must be the one imported
cat > allreduce_check.py << 'PY'
import numpy as np
import gloo_lite

ctx = gloo_lite.init()
a = np.full(1000, ctx.rank + 1, dtype=np.float32)
ctx.allreduce(a)
expected = ctx.size * (ctx.size + 1) / 2
assert np.all(a == expected), (a[:4], expected)
print(f"rank {ctx.rank}: ok ({gloo_lite.__file__})")
PY
"$venv/bin/python" -c "import gloo_lite, sys; assert '$repo' not in gloo_lite.__file__, gloo_lite.__file__"
PATH="$venv/bin:$PATH" gloo_lite_run -n 2 -- "$venv/bin/python" allreduce_check.py
"$venv/bin/python" -m gloo_lite.run -n 2 allreduce_check.py
if [ "$with_torch" = 1 ]; then
  # No `import gloo_lite` here: torch finds the backend through the installed entry point.
  "$venv/bin/python" - << 'PY'
import torch, torch.distributed as dist
dist.init_process_group("gloo_lite", store=dist.HashStore(), rank=0, world_size=1)
t = torch.ones(4)
dist.all_reduce(t)
assert torch.equal(t, torch.ones(4)), t
backend = dist.get_backend()
assert backend == "gloo_lite", backend
print("entry point: init_process_group(backend='gloo_lite') works without an import")
PY
  "$venv/bin/python" -m torch.distributed.run --nproc-per-node 2 "$repo/examples/ddp.py" \
    --backend gloo_lite --steps 5
  echo "wheel-check: the torch backend works from the wheel"
fi
echo "wheel-check: pip install . gives a working module"
