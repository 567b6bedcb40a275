"""Egress-only networking: checked by inspecting the installed rules, never by sending traffic to
private addresses."""

import pytest

from terminal_rl.sandbox.runtime.network import BLOCKED_RANGES, egress_rules, installed_rules, nameservers
from tests.support import small_limits


def test_rules_allow_dns_then_drop_private_ranges_and_the_host():
    rules = egress_rules("br-x", ["10.1.2.3"])
    assert rules[0] == (
        "DOCKER-USER",
        ["-i", "br-x", "-d", "10.1.2.3/32", "-p", "udp", "--dport", "53", "-j", "ACCEPT"],
    )
    drops = [rule for chain, rule in rules if chain == "DOCKER-USER" and rule[-1] == "DROP"]
    assert [rule[3] for rule in drops] == list(BLOCKED_RANGES)
    assert rules[-1] == ("INPUT", ["-i", "br-x", "-j", "DROP"])


def test_nameservers_are_read_from_resolv_conf(tmp_path):
    conf = tmp_path / "resolv.conf"
    conf.write_text("# c\nnameserver 10.0.0.2\nnameserver fe80::1\nsearch x\n")
    assert nameservers(conf) == ["10.0.0.2"]


@pytest.mark.docker
def test_network_tasks_join_the_egress_bridge_with_rules_installed(in_sandbox, sandbox_config):
    async def inspect(sandbox):
        return await sandbox.docker.call(sandbox.docker.api.inspect_container, sandbox.container_id)

    attrs = in_sandbox(inspect, limits=small_limits(network=True))
    assert attrs["HostConfig"]["NetworkMode"] == sandbox_config.container.egress_network
    interface = sandbox_config.container.egress_interface
    forward = installed_rules("DOCKER-USER")
    for blocked in BLOCKED_RANGES:
        assert f"-A DOCKER-USER -d {blocked} -i {interface} -j DROP" in forward
    # The drops come before Docker's own RETURN, so they take effect.
    assert forward.index(f"-A DOCKER-USER -d 10.0.0.0/8 -i {interface} -j DROP") < forward.index(
        "-A DOCKER-USER -j RETURN"
    )
    assert f"-A INPUT -i {interface} -j DROP" in installed_rules("INPUT")
