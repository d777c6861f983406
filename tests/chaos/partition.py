"""A network partition of one service process (issue 28): iptables on loopback.

Each process that may be partitioned starts in a cgroup (v2) of its own
(:func:`in_cgroup`; ``Cluster.cgroups`` in tests/e2e/platform/platform_cluster.py). A
socket is tagged with its process's cgroup when it is created, so all of its connections can
be told apart from everyone else's on loopback. From the start, two rules mark each such
connection in conntrack (``CONNMARK``): the ones its sockets open or answer (OUTPUT,
``-m cgroup``) and the ones made to its listening ports (INPUT). To cut it, packets of
marked connections are dropped both ways, and so are new connections from or to it; to
heal, those drop rules go. Packets are dropped, not refused, as on a real partition: its
TCP connections stall and retransmit, its Kafka session expires on the brokers (the group
moves its partitions), and when the rules go its connections resume, with whatever it had
in flight, which is exactly what fencing must stop. Needs root, a cgroup2 mount and
iptables (:func:`ensure`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from pathlib import Path


def cgroup2_root() -> Path | None:
    """Where the cgroup2 hierarchy is mounted (``/sys/fs/cgroup`` or ``…/unified``)."""
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                return Path(parts[1])
    except OSError:
        pass
    return None


def ensure() -> None:
    """Raise with the reason when a partition cannot be made here; install iptables from
    Debian's packages when it is missing (the chaos run installs what it uses)."""
    if os.getuid() != 0:
        raise RuntimeError("partition faults need root (iptables, cgroups)")
    if cgroup2_root() is None:
        raise RuntimeError("partition faults need a cgroup2 mount")
    if shutil.which("iptables") is None:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, check=False)
        install = ["apt-get", "install", "-y", "-qq", "iptables"]
        subprocess.run(install, env=env, capture_output=True, check=True)


def in_cgroup(argv: list[str], cgroup: Path) -> list[str]:
    """``argv`` run inside ``cgroup``: the shell joins it, then execs ``argv`` (same pid), so
    every socket the process ever opens is tagged with it."""
    join = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
    return ["sh", "-c", join, str(cgroup), *argv]


def _iptables(*rule: str, check: bool = True) -> bool:
    got = subprocess.run(["iptables", "-w", *rule], capture_output=True, check=False)
    if check and got.returncode != 0:
        raise RuntimeError(f"iptables {' '.join(rule)}: {got.stderr.decode(errors='replace')}")
    return got.returncode == 0


class Partitions:
    """The cgroups of one run's processes, the rules that mark their connections and the
    rules that cut them off."""

    MARK_BASE = 0x2800

    def __init__(self) -> None:
        root = cgroup2_root()
        assert root is not None, "ensure() first"
        self.root = root
        self.base = root / f"electric-chaos-{uuid.uuid4().hex[:8]}"
        #: name -> (cgroup path relative to the cgroup2 root, its ports, its conntrack mark)
        self._members: dict[str, tuple[str, tuple[int, ...], str]] = {}
        self._marking: list[list[str]] = []

    def cgroup(self, name: str, ports: tuple[int, ...]) -> Path:
        """The cgroup process ``name`` must be started in (created here, its connections
        marked from now on)."""
        path = self.base / name
        path.mkdir(parents=True, exist_ok=True)
        mark = hex(self.MARK_BASE + len(self._members) + 1)
        relative = str(path.relative_to(self.root))
        self._members[name] = (relative, ports, mark)
        rules = [
            ["OUTPUT", "-o", "lo", "-m", "cgroup", "--path", relative],
            *(["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port)] for port in ports),
        ]
        for rule in rules:
            marking = [*rule, "-j", "CONNMARK", "--set-mark", mark]
            _iptables("-A", *marking)
            self._marking.append(marking)
        return path

    def _cuts(self, name: str) -> list[list[str]]:
        relative, ports, mark = self._members[name]
        return [
            ["INPUT", "-i", "lo", "-m", "connmark", "--mark", mark, "-j", "DROP"],
            ["OUTPUT", "-o", "lo", "-m", "connmark", "--mark", mark, "-j", "DROP"],
            ["OUTPUT", "-o", "lo", "-m", "cgroup", "--path", relative, "-j", "DROP"],
            *(
                ["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port), "-j", "DROP"]
                for port in ports
            ),
        ]

    def cut(self, name: str) -> None:
        for rule in self._cuts(name):  # before the marking rules: -I puts them first
            _iptables("-I", *rule)

    def heal(self, name: str) -> None:
        for rule in self._cuts(name):
            while _iptables("-D", *rule, check=False):  # every copy
                pass

    def close(self) -> None:
        """Heal every cut, drop the marking rules, remove the cgroups (their processes are
        gone by now)."""
        for name in list(self._members):
            self.heal(name)
        for rule in self._marking:
            while _iptables("-D", *rule, check=False):
                pass
        for path in [*sorted(self.base.glob("*"), reverse=True), self.base]:
            with contextlib.suppress(OSError):
                path.rmdir()
