"""Each kind of C++ error reaches Python as its own class of gloo_lite.errors, raised from a call
and as Work.exception()'s object: the C++ error of each kind (gloo_lite::error_sample, its
class) through the module's real translation, against the table below (written here, not read
from the module)."""

import builtins

import pytest

import gloo_lite
from gloo_lite import _core

# sample name -> the class a Python caller sees, and a builtin it can also catch it as.
EXPECTED = {
    "other": (gloo_lite.Error, Exception),
    "timeout": (gloo_lite.TimeoutError, builtins.TimeoutError),
    "connection": (gloo_lite.ConnectionError, builtins.ConnectionError),
    "mismatch": (gloo_lite.MismatchError, gloo_lite.Error),
    "invalid_argument": (gloo_lite.InvalidArgument, ValueError),
    "store": (gloo_lite.StoreError, gloo_lite.Error),
    "unavailable": (gloo_lite.UnavailableError, gloo_lite.Error),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_kind_raises_its_class(name):
    cls, also = EXPECTED[name]
    with pytest.raises(also) as caught:
        _core._raise_error_sample(name)
    # The exact class: a kind mapped to a sibling or to the base would fail here.
    assert type(caught.value) is cls
    assert str(caught.value) == "sample " + name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_work_exception_is_the_same_class(name):
    error = _core._error_sample_object(name)
    assert type(error) is EXPECTED[name][0]
    assert str(error) == "sample " + name


def test_an_unknown_kind_is_refused():
    with pytest.raises(gloo_lite.InvalidArgument, match="no error kind named 'nope'"):
        _core._raise_error_sample("nope")


def test_every_class_is_exported_once():
    classes = [getattr(gloo_lite, name) for name in gloo_lite.errors.__all__]
    assert {cls for cls, _ in EXPECTED.values()} == set(classes)
