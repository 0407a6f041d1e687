"""The exceptions gloo_lite raises. Each C++ error type (gloo_lite/base/error.h) has one class
here, and each also derives from the builtin a Python caller would catch for that kind of
failure, so ``except TimeoutError`` and ``except ConnectionError`` work without knowing
gloo_lite."""

import builtins


class Error(Exception):
    """Base of every gloo_lite failure raised from C++ (a deadline, a lost peer, a mismatch...)."""


class TimeoutError(Error, builtins.TimeoutError):
    """A deadline passed before the operation completed; the message names the ranks that
    never arrived."""


class ConnectionError(Error, builtins.ConnectionError):
    """A peer vanished, reset its connection or aborted (its reason is in the message)."""


class MismatchError(Error):
    """Ranks disagree about a call: collective, type, count or root."""


class StoreError(Error):
    """The rendezvous store failed or could not be reached."""


class UnavailableError(Error):
    """A part that cannot run here: the CUDA collectives in a build without CUDA or on a machine
    without a usable GPU (the message says which)."""


class InvalidArgument(Error, ValueError):
    """An argument the C++ library refused (a bad rank, root, algorithm name, store URL...).
    Also a ValueError; buffer problems found before any traffic raise plain ValueError or
    TypeError."""


__all__ = [
    "Error",
    "TimeoutError",
    "ConnectionError",
    "MismatchError",
    "StoreError",
    "InvalidArgument",
    "UnavailableError",
]
