"""gloo_lite from Python: collectives and send/recv on numpy arrays (any buffer-protocol object).

    import numpy as np, gloo_lite
    ctx = gloo_lite.init()          # rank, size and store from gloo_lite_run, torchrun, mpirun, Slurm
    a = np.full(4, ctx.rank, dtype=np.float32)
    ctx.allreduce(a)                # in place: the sum over ranks

See docs/python.md for the whole API, the dtypes, and what Ctrl-C does.
"""

# The exception classes, listed once: in errors.__all__.
from . import errors
from .errors import *  # noqa: F401,F403
from ._core import Context, CudaCommunicator, ReduceOp, Work, _collectives, cuda_available

__version__ = "0.1.0"

#: The C++ table of collectives (gloo_lite/collective_info.h): one dict per collective with
#: name, rooted, has_op, per_rank_blocks, per_pair_blocks, moves_data.
COLLECTIVES = tuple(_collectives())


def init(store=None, rank=None, size=None, timeout=None, prefix=""):
    """Create a Context.

    ``init()`` reads rank, size and store from the environment that gloo_lite_run, torchrun,
    Open MPI, PMI or Slurm set (gloo_lite::init_from_env). ``init(store="tcp://host:port",
    rank=r, size=n)`` meets the other ranks at that store (tcp://, file://, redis://) under
    ``prefix``. ``timeout`` (seconds) bounds connecting and is every call's default deadline;
    None means GLOO_LITE_TIMEOUT_MS (300 s unless set).
    """
    from . import _core

    if store is None:
        if rank is not None or size is not None:
            raise ValueError(
                "init: rank and size come from the environment when store is None; "
                "pass store= as well to give them explicitly")
        return _core._init_from_env(timeout)
    if rank is None or size is None:
        raise ValueError("init: store= needs rank= and size= too")
    return _core._init(store, int(rank), int(size), timeout, prefix)


__all__ = ["init", "Context", "CudaCommunicator", "cuda_available", "Work", "ReduceOp", "COLLECTIVES", *errors.__all__]
