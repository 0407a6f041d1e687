"""CUDA tensors on the gloo_lite backend (registered for "cpu" and "cuda"): the collectives on
CUDA tensors against torch's own gloo on the same tensors, stream-ordered on torch's current
stream, and DDP with a CUDA model, at 2 ranks sharing GPU 0; send/recv, gather, scatter and
all_to_all on CUDA tensors against CPU references at 2 and 3 ranks. Skips where torch has no
CUDA."""

import pytest
import torch

from conftest import torchrun, worker


def test_cuda_tensors_and_ddp_on_a_gpu():
    if not torch.cuda.is_available():
        pytest.skip("torch.cuda.is_available() is False (no usable GPU): CUDA tensors on the "
                    "gloo_lite backend not tested")
    run = torchrun(worker("cuda_tensors.py"), 2)
    assert run.codes == [0], run.show()
    for rank in range(2):
        assert run.matching(rank, "CUDA checks passed"), run.show()


@pytest.mark.parametrize("ranks", [2, 3])
def test_cuda_point_to_point_gather_scatter_all_to_all_on_a_gpu(ranks):
    if not torch.cuda.is_available():
        pytest.skip("torch.cuda.is_available() is False (no usable GPU): send/recv, gather, "
                    "scatter and all_to_all on CUDA tensors not tested")
    run = torchrun(worker("cuda_p2p.py"), ranks)
    assert run.codes == [0], run.show()
    for rank in range(ranks):
        assert run.matching(rank, "CUDA p2p checks passed"), run.show()
