"""gloo_lite as a torch.distributed backend.

``import gloo_lite.torch`` registers the backend "gloo_lite" for CPU and CUDA tensors (CUDA
tensors go through gloo_lite.cuda, stream-ordered on torch's current stream); an installed
gloo_lite also registers it through the ``torch.distributed.backends`` entry point, so
``init_process_group(backend="gloo_lite")`` works without the import::

    import torch.distributed as dist
    dist.init_process_group(backend="gloo_lite")            # or "cpu:gloo_lite,cuda:nccl"
    group = dist.new_group([0, 1], backend="gloo_lite")

The backend meets its peers through the store torch gives it (torchrun's TCPStore,
``file://``, ``env://``), so it needs no port of its own. Collectives are gloo_lite's
non-blocking calls: ``async_op=True`` returns at once, and DDP's bucketed allreduce overlaps
the backward pass. Failures are torch's distributed errors carrying gloo_lite's message (which
collective, which rank): ``DistBackendError`` for timeouts, dead peers and mismatches,
``DistStoreError`` for the store, ``ValueError`` for bad arguments. With
``TORCH_DISTRIBUTED_DEBUG=DETAIL`` every call's signature is also compared across ranks first
(gloo_lite's call check). See docs/torch.md.
"""

import os

import torch
import torch.distributed as dist

NAME = "gloo_lite"


def _load():
    try:
        from . import _torch_version
    except ImportError:
        raise ImportError(
            "gloo_lite was built without its torch backend (torch was not installed for the "
            "Python that built it). Install torch, then reinstall gloo_lite "
            "(pip install --force-reinstall --no-deps .), or run scripts/install-torch.sh "
            "before building from source."
        ) from None
    built_for = _torch_version.BUILT_FOR
    if built_for != torch.__version__:
        raise ImportError(
            f"gloo_lite's torch backend was built for torch {built_for}, but torch "
            f"{torch.__version__} is installed; C++ extensions only load into the torch they "
            "were built for. Rebuild gloo_lite against this torch "
            "(pip install --force-reinstall --no-deps .)."
        )
    from . import _torch

    return _torch


_torch = _load()


def _detail_checks() -> bool:
    return os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL"


def _describe_store(store) -> str:
    inner = store
    # torch hands each group a PrefixStore over the job's store; name the one underneath.
    while hasattr(inner, "underlying_store"):
        inner = inner.underlying_store
    if isinstance(inner, dist.TCPStore):
        return f"TCPStore at {inner.host}:{inner.port}"
    return type(inner).__name__


_log_rank_set = False


def _create(options, backend_options=None):
    """torch's factory hook (extended API): one backend per process group and device."""
    global _log_rank_set
    if not _log_rank_set:
        # gloo_lite's log lines name the job's rank: torchrun's RANK, else this first group's.
        _torch.set_log_rank(int(os.environ.get("RANK", options.group_rank)))
        _log_rank_set = True
    return _torch.create_backend(
        options.store,
        _describe_store(options.store),
        options.group_rank,
        options.group_size,
        options.timeout,
        _detail_checks(),
    )


def register():
    """Registers the backend with torch.distributed (idempotent); the entry point calls it."""
    if NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    dist.Backend.register_backend(NAME, _create, extended_api=True, devices=["cpu", "cuda"])


register()

__all__ = ["NAME", "register"]
