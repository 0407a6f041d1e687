"""Each kind of C++ error reaches torch as the error torch code catches for it: the C++ error of
each kind (gloo_lite::error_sample, its class) through the backend's real translation
(to_torch), against the table below (written here, not read from the backend)."""

import pytest
import torch.distributed as dist

from gloo_lite import _torch

# sample name -> the exact class torch's caller sees.
EXPECTED = {
    "other": dist.DistBackendError,
    "timeout": dist.DistBackendError,
    "connection": dist.DistBackendError,
    "mismatch": dist.DistBackendError,
    "invalid_argument": ValueError,
    "store": dist.DistStoreError,
    "unavailable": dist.DistBackendError,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_kind_raises_its_torch_error(name):
    with pytest.raises(Exception) as caught:
        _torch._raise_error_sample(name)
    # The exact class: a store failure mapped to DistBackendError (its sibling) would fail here.
    assert type(caught.value) is EXPECTED[name]
    assert str(caught.value).startswith("sample " + name), str(caught.value)
