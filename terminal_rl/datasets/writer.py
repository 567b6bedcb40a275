"""Each dataset as JSON lines and parquet (a Hugging Face ``datasets``-loadable schema) with a card."""

from __future__ import annotations

import json
from pathlib import Path

CARD = """# terminal_rl {name} dataset

{summary}

- records: {count}
- built from runs: {runs}
- selection: {rule}
- files: `{name}.jsonl`, `{name}.parquet` (load with `datasets.load_dataset("parquet", data_files=...)`)

## Fields
{fields}
"""


def write_dataset(
    out_dir: Path, name: str, records: list[dict], summary: str, rule: str, runs: list[str], fields: dict[str, str]
) -> Path:
    """``<out_dir>/<name>.jsonl``, ``.parquet`` and ``<name>.md`` (the card)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir.mkdir(parents=True, exist_ok=True)
    remove_dataset(out_dir, name)
    with (out_dir / f"{name}.jsonl").open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if records:
        pq.write_table(pa.Table.from_pylist([_parquet_safe(r) for r in records]), out_dir / f"{name}.parquet")
    field_lines = "\n".join(f"- `{key}`: {text}" for key, text in fields.items())
    (out_dir / f"{name}.md").write_text(
        CARD.format(
            name=name, summary=summary, count=len(records), rule=rule, runs=", ".join(runs), fields=field_lines
        ),
        encoding="utf-8",
    )
    return out_dir / f"{name}.parquet"


def remove_dataset(out_dir: Path, name: str) -> None:
    """Remove an earlier build's files of dataset ``name`` (a stale parquet would be trained on)."""
    for suffix in (".jsonl", ".parquet", ".md"):
        (out_dir / f"{name}{suffix}").unlink(missing_ok=True)


def _parquet_safe(value):
    """Empty mappings become null (parquet has no struct without fields); the JSON lines keep them."""
    if isinstance(value, dict):
        return {key: _parquet_safe(item) for key, item in value.items()} or None
    if isinstance(value, list):
        return [_parquet_safe(item) for item in value]
    return value


def upload(out_dir: Path, repo_id: str, private: bool) -> None:
    """Push the datasets folder to the Hugging Face Hub (opt-in; the token comes from $HF_TOKEN)."""
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(repo_id=repo_id, folder_path=str(out_dir), repo_type="dataset")
