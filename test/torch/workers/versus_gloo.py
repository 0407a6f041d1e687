"""Running one call on both backends and comparing: the group "gloo_lite" (the default group)
against torch's own gloo (a second group over the same ranks), on the same inputs. Where torch's
gloo rejects the call (an op, a dtype or a form it does not have), the result is compared with a
local reference instead, and a NOTE line says so once per call and reason."""

from common import say

# What torch's gloo raises for a call it does not support.
GLOO_REJECTS = (RuntimeError, ValueError, NotImplementedError, TypeError)
_noted = set()


def compare(ck, job, name, run, reference, exact_gloo, exact_reference, gloo=True):
    """`run(group)` makes fresh inputs, runs the call on `group` (None: the default group,
    gloo_lite) and returns its outputs (None on ranks without any); `reference()` computes them
    locally."""
    got = run(None)
    want, against = None, "gloo"
    if gloo:
        try:
            want = run(job.gloo)
        except GLOO_REJECTS as e:
            reason = str(e).splitlines()[0][:120]
            kind = name.split("/")[0]
            if (kind, reason) not in _noted:
                _noted.add((kind, reason))
                say(f"NOTE gloo rejects {name} ({type(e).__name__}: {reason}); "
                    "comparing with the local reference")
    if want is None:
        want, against = reference(), "reference"
        exact = exact_reference
    else:
        exact = exact_gloo
    if got is None and want is None:
        return
    ck.same(name, got, want, exact, against)
