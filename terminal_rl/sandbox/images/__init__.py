"""Task images: built once per content hash, the offline base images they build FROM, build reports,
distribution to nodes that cannot build."""
