"""gloo_lite.CudaCommunicator on 4 processes: on the host stand-in layer (no GPU needed; its
device arrays are test_only StandInDeviceArray objects over host memory), and on a real GPU
(torch CUDA tensors), which skips where there is none."""

import pytest

import gloo_lite
from conftest import assert_ok, launch, rank_lines, worker


def _passed_on_every_rank(result, n):
    assert_ok(result)
    for rank in range(n):
        assert any("passed" in line for line in rank_lines(result.stdout, rank)), result.stdout


def test_cuda_collectives_on_the_host_stand_in():
    _passed_on_every_rank(launch(worker("cuda_stand_in.py"), n=4), 4)


def test_cuda_collectives_on_a_real_gpu():
    available, why = gloo_lite.cuda_available()
    if not available:
        pytest.skip(f"no usable GPU, CUDA layer not tested: {why}")
    torch = pytest.importorskip("torch", reason="the real-GPU test makes its arrays with torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here (torch.cuda.is_available() is False)")
    _passed_on_every_rank(launch(worker("cuda_gpu.py"), n=2), 2)


def test_cuda_send_recv_on_the_host_stand_in():
    _passed_on_every_rank(launch(worker("cuda_p2p_stand_in.py"), n=4), 4)
