"""Why a task image did not build, read from its build log, and whether trying again can help (pure).

The causes, so a report over hundreds of tasks reads at a glance and says what to fix: a Dockerfile
error, a missing base image (no recipe covers it: ``python -m terminal_rl.tasks`` prints the fix), a base image
that differs from the real one where the Dockerfile relies on it, a package the base image's
distribution does not have, a step's own command that failed otherwise (these five fail the same way
every time), the network (a download from a site this machine cannot reach), a timeout, or other (an
engine error, a dropped connection): the last three may pass on another try, so nothing keeps them
for good.
"""

from __future__ import annotations

import re

# Matched against the log with ANSI codes and all whitespace removed: Docker's streamed log splits
# words across chunks ("Could not resolv" | "e host").
_REASONS = (
    ("Dockerfile error", re.compile(r"dockerfileparseerror|unknowninstruction|failedtoparsedockerfile", re.I)),
    (
        "missing base image",
        re.compile(
            r"pullaccessdenied|manifestunknown|repositorydoesnotexist|"
            r"gethttps://registry|dialtcp:lookupregistry|nosuchimage|notpresentlocally\(buildsneverpull",
            re.I,
        ),
    ),
    (
        "base image differs from the real one",
        re.compile(
            r"user'ubuntu'doesnotexist|failedtocreatesymboliclink'/usr/bin/python'|externally-managed-environment", re.I
        ),
    ),
    (
        "network",
        re.compile(
            r"couldnotresolvehost|failedtoconnect|connectionrefused|temporaryfailureresolving|nameorservicenotknown|"
            r"unabletoaccess'https?://|wget:unable|curl:\(\d+\)|npm:notfound|rbenv:notfound|certificate_verify_failed|"
            r"sslerror|networkisunreachable|dialtcp:lookup|nosuchhost",
            re.I,
        ),
    ),
    (
        "package not found",
        re.compile(
            r"unabletolocatepackage|hasnoinstallationcandidate|nomatchingdistributionfound|"
            r"couldnotfindaversionthatsatisfies|packagenotfound|notfoundinrepository",
            re.I,
        ),
    ),
    ("timeout", re.compile(r"timedout|readtimeout", re.I)),
    # A Dockerfile step's own command failed, for none of the reasons above: it fails again.
    ("build step failed", re.compile(r"returnedanon-zerocode|didnotcompletesuccessfully:exitcode", re.I)),
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m|\[\d+m")
TRANSIENT = frozenset({"network", "timeout", "other"})


def classify(reason: str, log_tail: str) -> str:
    text = re.sub(r"\s+", "", _ANSI.sub("", f"{reason}\n{log_tail}"))
    return next((label for label, pattern in _REASONS if pattern.search(text)), "other")


def is_transient(category: str) -> bool:
    return category in TRANSIENT
