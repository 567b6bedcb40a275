"""Egress-only networking for tasks that allow network.

One user-defined bridge per node (Docker's default address pools run out at ~31 networks), with
inter-container traffic off, and iptables rules that drop traffic from the bridge to the host itself
and to private, link-local and shared address ranges, where Ray and other cluster services listen.
DNS to the host's configured nameservers stays allowed, or names would not resolve.

Not guarded: IPv6 (the bridge is created without it), and a nameserver used as a tunnel.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import docker
from docker.errors import NotFound

from terminal_rl.sandbox.lifecycle.owner import MANAGED

BLOCKED_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10", "127.0.0.0/8")


def ensure_egress_network(client: docker.DockerClient, name: str, interface: str) -> None:
    """Create the egress bridge once (idempotent) and make sure its rules are installed."""
    try:
        client.networks.get(name)
    except NotFound:
        client.networks.create(
            name,
            driver="bridge",
            labels={MANAGED: "1", "terminal_rl.kind": "egress"},
            options={"com.docker.network.bridge.name": interface, "com.docker.network.bridge.enable_icc": "false"},
        )
    install_rules(egress_rules(interface, nameservers()))


def nameservers(resolv_conf: Path = Path("/etc/resolv.conf")) -> list[str]:
    if not resolv_conf.is_file():
        return []
    return [
        line.split()[1]
        for line in resolv_conf.read_text().splitlines()
        if line.startswith("nameserver") and len(line.split()) > 1 and ":" not in line.split()[1]
    ]


def egress_rules(interface: str, dns_servers: list[str]) -> list[tuple[str, list[str]]]:
    """(chain, rule) pairs in evaluation order: DNS allowed first, then private ranges dropped."""
    rules: list[tuple[str, list[str]]] = []
    for chain in ("DOCKER-USER", "INPUT"):
        for server in dns_servers:
            for protocol in ("udp", "tcp"):
                rules.append(
                    (chain, ["-i", interface, "-d", f"{server}/32", "-p", protocol, "--dport", "53", "-j", "ACCEPT"])
                )
    for blocked in BLOCKED_RANGES:
        rules.append(("DOCKER-USER", ["-i", interface, "-d", blocked, "-j", "DROP"]))
    # Anything addressed to the host itself (any of its addresses) arrives on INPUT.
    rules.append(("INPUT", ["-i", interface, "-j", "DROP"]))
    return rules


def install_rules(rules: list[tuple[str, list[str]]]) -> None:
    """Append the missing rules, in order, at the top of each chain (before Docker's RETURN)."""
    positions: dict[str, int] = {}
    for chain, rule in rules:
        positions[chain] = positions.get(chain, 0) + 1
        if subprocess.run(["iptables", "-C", chain, *rule], capture_output=True).returncode == 0:
            continue
        subprocess.run(["iptables", "-I", chain, str(positions[chain]), *rule], check=True, capture_output=True)


def installed_rules(chain: str) -> list[str]:
    """``iptables -S CHAIN`` lines, for inspection."""
    return subprocess.run(["iptables", "-S", chain], check=True, capture_output=True, text=True).stdout.splitlines()
