"""The gloo_lite_run launcher from Python: ``python3 -m gloo_lite.run -n 4 script.py [args]``,
or the ``gloo_lite_run`` console script that ``pip install`` puts on PATH. Both exec the
launcher binary bundled in the package (gloo_lite/bin/), or the build tree's, or one on PATH.
A program ending in ``.py`` runs under this interpreter, so ``-n 4 script.py`` works without
``-- python3``."""

import os
import shutil
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def launcher_path():
    """The gloo_lite_run binary this package runs, or None."""
    candidates = [
        os.path.join(_HERE, "bin", "gloo_lite_run"),  # installed wheel
        os.path.join(_HERE, "..", "..", "tools", "gloo_lite_run"),  # <build>/python/gloo_lite
    ]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    # On PATH, a compiled launcher only: the console script of the same name is this module.
    found = shutil.which("gloo_lite_run")
    if found:
        with open(found, "rb") as f:
            if f.read(4) == b"\x7fELF":
                return found
    return None


def _with_interpreter(args):
    """Inserts this interpreter before the program when it is a .py file."""
    # The program is the first argument after "--", or after the launcher's own options.
    takes_value = {"-n", "--host", "--timeout", "--grace"}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in takes_value:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        break
    if i < len(args) and args[i].endswith(".py"):
        return args[:i] + [sys.executable] + args[i:]
    return args


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    path = launcher_path()
    if path is None:
        sys.stderr.write("gloo_lite.run: the gloo_lite_run binary is not installed with this "
                         "package (pip install . builds it) nor on PATH\n")
        return 127
    args = _with_interpreter(args)
    os.execv(path, [path] + args)


if __name__ == "__main__":
    sys.exit(main())
