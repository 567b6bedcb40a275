"""Keeping containers from outliving their run: owner labels, leases, the janitor and the node's
sandbox slots."""
