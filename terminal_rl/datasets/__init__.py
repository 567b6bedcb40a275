"""Datasets from rollouts and evaluations: SFT, DPO and PRM records, with a forged-fixture filter.

    python -m terminal_rl.datasets runs=[RUN_A,RUN_B] [overrides]

Sources (``sources.py``) -> forged-fixture flags (``forged.py``) -> selection (``selection.py``) ->
records with token ids and masks (``records.py``) -> optional step scores (``prm.py``) -> JSONL,
parquet and a card per dataset (``writer.py``).
"""
