"""The host stand-in's device array, for tests only: __cuda_array_interface__ over host (numpy)
memory. With CudaCommunicator(ctx, "host-stand-in") "device" memory is host memory, so this is
what a CUDA array is to the stand-in layer; with a real CUDA layer it would be a wrong pointer."""

import numpy as np


class StandInDeviceArray:
    def __init__(self, host, readonly=False, strides=None):
        self.host = host  # keeps the memory alive
        self._readonly = readonly
        self._strides = strides

    @property
    def __cuda_array_interface__(self):
        typestr = self.host.dtype.str
        if self.host.dtype.name == "bfloat16":
            typestr = "<V2"  # what __cuda_array_interface__ has for it: no standard code
        return {
            "shape": self.host.shape,
            "typestr": typestr,
            "data": (self.host.ctypes.data, self._readonly),
            "strides": self._strides,
            "version": 3,
            "stream": None,
        }


def device(host, **kwargs):
    return StandInDeviceArray(np.ascontiguousarray(host), **kwargs)
