"""Task data layer: the Task model, loaders (Terminal-Bench-RL CSV, Harbor, Terminal-Bench 1),
validation, the task store, Harbor export and export to verl's dataset format."""
