"""Action protocols: how a model's text becomes actions and how results become observations.

Each protocol owns its prompt (a versioned file in ``prompts/``) and its parser. ``PROTOCOLS`` maps
the ``agent`` config group's ``protocol`` names to classes.
"""

from __future__ import annotations

from terminal_rl.agent.protocols.base import ActionProtocol
from terminal_rl.agent.protocols.bash_only import BashOnlyProtocol
from terminal_rl.agent.protocols.terminus_json import TerminusJsonProtocol
from terminal_rl.agent.protocols.xml_yaml import XmlYamlProtocol

PROTOCOLS: dict[str, type[ActionProtocol]] = {
    cls.name: cls for cls in (XmlYamlProtocol, BashOnlyProtocol, TerminusJsonProtocol)
}


def make_protocol(name: str) -> ActionProtocol:
    if name not in PROTOCOLS:
        raise ValueError(f"agent.protocol={name!r} is not one of {sorted(PROTOCOLS)}")
    return PROTOCOLS[name]()
