"""Task data layer: the Task model, its sources (loaders for the Terminal-Bench-RL CSV, Harbor and
Terminal-Bench 1 folders; procedural families made in code, with their demonstrations), validation,
the task store, Harbor export and export to verl's dataset format."""
