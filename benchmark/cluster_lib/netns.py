"""The simulated hosts, through test/netns/netns_lib.sh (the namespaces the netns tests use):
a hub namespace holding bridge br0 (192.0.2.254) and the TCP store, one namespace per host
(192.0.2.(h+1)) cabled to it by a veth whose two directions tc shapes to the link rate.

Nothing is made in the caller's namespace: every veth, qdisc and the bridge live in the new
namespaces, so deleting them (teardown) removes everything; `leftovers` checks that it did.
"""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
LIB = os.path.join(REPO, "test", "netns", "netns_lib.sh")
HUB_ADDRESS = "192.0.2.254"


def default_prefix():
    # the dash ends the prefix: teardown's match on 'glc12-' never takes glc123-'s namespaces
    return "glc%d-" % os.getpid()


class Cluster:
    def __init__(self, hosts, rate_tc, prefix=None):
        self.hosts = hosts
        self.rate_tc = rate_tc
        self.prefix = prefix or default_prefix()
        self.made = False

    def _lib(self, script, check=True):
        p = subprocess.run(["bash", "-c", 'NETNS_PREFIX="$1"; . "$2"; ' + script, "cluster",
                            self.prefix, LIB], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if check and p.returncode != 0:
            raise RuntimeError("netns_lib.sh: %s failed (rc %d):\n%s" % (script, p.returncode,
                                                                       p.stdout[-1500:]))
        return p.stdout

    def namespace(self, host):
        return "%s%s" % (self.prefix, "hub" if host == "hub" else "r%d" % host)

    @staticmethod
    def address(host):
        return HUB_ADDRESS if host == "hub" else "192.0.2.%d" % (host + 1)

    def exec_prefix(self, host):
        return ["ip", "netns", "exec", self.namespace(host)]

    def setup(self):
        """Builds the hub, the hosts and their shaped cables. On failure the caller's teardown
        (always called) removes whatever was made."""
        self.made = True
        self._lib("netns_setup %d" % self.hosts)
        for h in range(self.hosts):
            self._lib("netns_shape %d %s" % (h, self.rate_tc))

    def qdiscs(self):
        """tc's view of each host's two shaped directions (for the run's metadata)."""
        out = {}
        for h in range(self.hosts):
            out[h] = self._lib('netns_exec %d tc qdisc show dev veth0; netns_exec hub tc qdisc '
                               'show dev p%d' % (h, h), check=False).strip().splitlines()
        return out

    def teardown(self):
        """Kills what runs in our namespaces and deletes them (idempotent)."""
        self._lib("netns_teardown", check=False)

    def leftovers(self):
        """Our namespaces that still exist (should be none after teardown)."""
        return leftovers(self.prefix)


def leftovers(prefix):
    p = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True)
    return [ln.split()[0] for ln in p.stdout.splitlines()
            if ln.strip() and ln.split()[0].startswith(prefix)]
