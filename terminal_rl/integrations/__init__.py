"""Integrations with third-party frameworks; each sub-package is the only importer of its framework."""
