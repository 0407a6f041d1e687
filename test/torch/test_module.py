"""gloo_lite.torch itself: registration with torch.distributed, and the clear ImportError of a
backend built for another torch than the one installed."""

import subprocess
import sys

import torch
import torch.distributed as dist

import gloo_lite.torch
from conftest import child_env


def test_the_backend_is_registered_for_cpu_and_cuda_once():
    assert "GLOO_LITE" in dist.Backend._plugins
    assert dist.Backend("gloo_lite") == "gloo_lite"
    gloo_lite.torch.register()  # again: a no-op, not torch's "already registered" error
    assert dist.Backend.backend_capability["gloo_lite"] == ["cpu", "cuda"]
    assert gloo_lite.torch._torch.built_for_torch == torch.__version__


def test_a_backend_built_for_another_torch_says_which():
    # A fresh interpreter where torch claims another version before gloo_lite.torch loads.
    code = ("import torch; torch.__version__ = '0.0.1'\n"
            "try:\n"
            "    import gloo_lite.torch\n"
            "except ImportError as e:\n"
            "    print('ImportError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    message = out.stdout
    assert "ImportError:" in message, message
    for needle in (f"built for torch {torch.__version__}", "0.0.1 is installed", "Rebuild"):
        assert needle in message, f"the message lacks {needle!r}: {message}"
