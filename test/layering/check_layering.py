#!/usr/bin/env python3
"""Checks the layering of docs/layering.md: which directory (target) may include which.

Usage: check_layering.py SOURCE_ROOT    scans the tree; exit 1 naming each forbidden include
       check_layering.py --self-test    proves the check can fail (a core file that includes a
                                        transport, as bootstrap.cc once did; cuda/ including an
                                        internal header of core)

Only `#include "..."` lines are checked (system headers use <...>). A quoted include without a
directory names a file beside the includer. Keep RULES in step with docs/layering.md.

The public headers rule: the directories above core (ABOVE_CORE) may include only the public
headers of gloo_lite/ (gloo_lite/public_headers.txt, also the installed set), and a public header
includes only public headers. EXCEPTIONS lists the few includes of internal headers from above
core that remain, each with its reason; one that is gone fails too, so the list stays true.
"""
import os
import re
import sys
import tempfile

# Directory (of the including file) -> include prefixes it may use. The longest matching
# directory wins. Tests and fuzz targets look at internals on purpose and are not checked.
BASE = ["gloo_lite/base/"]
CONTRACT = BASE + ["gloo_lite/transport/"]
CORE = ["gloo_lite/", "rendezvous/"]  # the public API and everything below it, no transport
RULES = {
    "gloo_lite/base/": BASE,
    "gloo_lite/transport/": CONTRACT,
    "rendezvous/": BASE + ["rendezvous/"],
    "transport_tcp/": CONTRACT + ["transport_tcp/"],
    # Its side channel (handshake, liveness, abort) is a TCP mesh.
    "transport_ibverbs/": CONTRACT + ["transport_tcp/", "transport_ibverbs/"],
    "transport_shm/": CONTRACT + ["transport_shm/"],
    "transports/": CONTRACT + ["transport_tcp/", "transport_ibverbs/", "transport_shm/"],
    "gloo_lite/": CORE,
    # The CUDA collectives sit on the core API, like a binding; the doors above them may use them.
    "cuda/": CORE + ["cuda/"],
    "bindings/": CORE + ["cuda/", "bindings/"],
    "python/": CORE + ["cuda/"],
    "tools/": CORE + ["tools/"],
    "benchmark/": CORE + ["cuda/", "benchmark/"],
    "examples/": ["gloo_lite/"],
}
# The directories above core: of gloo_lite/ they see the public headers only.
ABOVE_CORE = ("cuda/", "bindings/", "python/", "tools/", "benchmark/", "examples/")
PUBLIC_LIST = "gloo_lite/public_headers.txt"
# (file, internal header) -> why it still needs it. Remove an entry once its file stops.
EXCEPTIONS = {
    ("cuda/gpudirect.cc", "gloo_lite/context_engine.h"):
        "moves device buffers, registered as CUDA memory, on the engine's mesh itself (GPUDirect "
        "send, recv, broadcast and allgather), without a call fingerprint or flight record: the "
        "collective layer registers host memory only, so routing them through it needs a "
        "collective entry point that takes a transport memory kind",
    ("cuda/gpudirect.cc", "gloo_lite/stream.h"):
        "the same broadcast and allgather take a turn on the context's stream of their tag",
}
# Every transport_* directory needs a rule: a new transport must be placed in the layering.
TRANSPORT_DIR = re.compile(r"^transport_[a-z0-9_]+/$")
SOURCE = re.compile(r"\.(cc|cpp|c|h|hpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SKIP = {"test", "fuzz", "build", "docs", "cmake", "scripts", "shared", "third_party"}


def rule_for(path):
    best = None
    for directory in RULES:
        if path.startswith(directory) and (best is None or len(directory) > len(best)):
            best = directory
    return best


def check(root):
    problems = []
    public = read_public(root)
    used_exceptions = set()
    for header in sorted(public or ()):
        if not os.path.exists(os.path.join(root, header)):
            problems.append(f"{PUBLIC_LIST}: lists {header}, which does not exist")
    for top in sorted(os.listdir(root)):
        full = os.path.join(root, top)
        if not os.path.isdir(full) or top.startswith(".") or top in SKIP:
            continue
        if top.startswith("build") or os.path.exists(os.path.join(full, "CMakeCache.txt")):
            continue
        if TRANSPORT_DIR.match(top + "/") and top + "/" not in RULES:
            problems.append(f"{top}/: a transport directory without a layering rule; add it to "
                            "docs/layering.md and RULES in test/layering/check_layering.py")
            continue
        for directory, _, files in os.walk(full):
            for name in sorted(files):
                if not SOURCE.search(name):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/")
                rule = rule_for(path)
                if rule is None:
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        included = match.group(1)
                        if "/" not in included:  # beside the includer
                            continue
                        if not any(included.startswith(prefix) for prefix in RULES[rule]):
                            problems.append(
                                f'{path}:{number}: includes "{included}", which {rule} may not '
                                f'include (allowed: {", ".join(RULES[rule])}; see '
                                "docs/layering.md)")
                        elif not public_include(path, included, public, used_exceptions):
                            problems.append(
                                f'{path}:{number}: includes "{included}", an internal header of '
                                f"core; {rule} may include only the public headers ({PUBLIC_LIST}"
                                "; see docs/layering.md)")
    for path, header in sorted(set(EXCEPTIONS) - used_exceptions):
        if os.path.exists(os.path.join(root, path)):
            problems.append(f'{path}: no longer includes "{header}"; remove its exception from '
                            "EXCEPTIONS in test/layering/check_layering.py")
    return problems


def read_public(root):
    """The public headers (gloo_lite/public_headers.txt), or None where the tree has no list."""
    listed = os.path.join(root, PUBLIC_LIST)
    if not os.path.exists(listed):
        return None
    with open(listed, encoding="utf-8") as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def public_include(path, included, public, used_exceptions):
    """Whether `path` may include `included` under the public headers rule."""
    if public is None or not included.startswith("gloo_lite/") or included in public:
        return True
    if path in public:
        return False  # a public header includes public headers only
    if not path.startswith(ABOVE_CORE):
        return True
    if (path, included) in EXCEPTIONS:
        used_exceptions.add((path, included))
        return True
    return False


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "gloo_lite", "transport"))
        with open(os.path.join(root, "gloo_lite", "bootstrap.cc"), "w") as f:
            f.write('#include "gloo_lite/bootstrap.h"\n\n#include "gloo_lite/transport/table.h"\n'
                    '#include "transport_tcp/tcp_device.h"\n')
        with open(os.path.join(root, "gloo_lite", "transport", "mixed_mesh.cc"), "w") as f:
            f.write('#include "gloo_lite/context.h"\n')
        os.makedirs(os.path.join(root, "transport_udp"))
        # The public headers rule: cuda/ includes an internal header of core, a public header
        # includes an internal one; a listed exception is allowed.
        with open(os.path.join(root, PUBLIC_LIST), "w") as f:
            f.write("# public\ngloo_lite/context.h\ngloo_lite/collectives.h\n")
        with open(os.path.join(root, "gloo_lite", "context.h"), "w") as f:
            f.write('#include "gloo_lite/work.h"\n')
        with open(os.path.join(root, "gloo_lite", "collectives.h"), "w") as f:
            f.write('#include "gloo_lite/context.h"\n#include "gloo_lite/stream.h"\n')
        os.makedirs(os.path.join(root, "cuda"))
        with open(os.path.join(root, "cuda", "gpudirect.cc"), "w") as f:  # stream.h's is stale
            f.write('#include "gloo_lite/context_engine.h"\n')
        with open(os.path.join(root, "cuda", "collectives.cc"), "w") as f:
            f.write('#include "gloo_lite/collectives.h"\n\n#include "gloo_lite/work_state.h"\n')
        problems = check(root)
        expected = [
            'gloo_lite/bootstrap.cc:4: includes "transport_tcp/tcp_device.h"',
            'gloo_lite/transport/mixed_mesh.cc:1: includes "gloo_lite/context.h"',
            "transport_udp/: a transport directory without a layering rule",
            'cuda/collectives.cc:3: includes "gloo_lite/work_state.h", an internal header',
            'gloo_lite/context.h:1: includes "gloo_lite/work.h", an internal header',
            'gloo_lite/collectives.h:2: includes "gloo_lite/stream.h", an internal header',
            'cuda/gpudirect.cc: no longer includes "gloo_lite/stream.h"',
        ]
        for text in expected:
            if not any(p.startswith(text) for p in problems):
                print("self-test FAILED: expected a problem starting with: " + text)
                print("got:\n  " + "\n  ".join(problems))
                return 1
        if len(problems) != len(expected):
            print("self-test FAILED: unexpected problems:\n  " + "\n  ".join(problems))
            return 1
    print("self-test passed: the check names file, line and the forbidden include")
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    problems = check(argv[1])
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} layering violation(s); docs/layering.md says which target may "
              "include which")
        return 1
    print("layering: every include is allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
