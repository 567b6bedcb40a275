"""Data transformation: totals, filtered rows and per-group sums from a CSV file."""

from __future__ import annotations

import random
from collections import defaultdict

from terminal_rl.tasks.families.base import FamilyTask, pytest_file, read_text_helper
from terminal_rl.tasks.model import Difficulty

NAME = "csv_report"
CATEGORY = "data-processing"
REGIONS = ("north", "south", "east", "west")
NAMES = ("ada", "ben", "cy", "dee", "eli", "fay", "gus", "hal")
DATA = "/app/data.csv"


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    rows = [(i + 1, rng.choice(NAMES), rng.choice(REGIONS), rng.randint(1, 500)) for i in range(rng.randint(8, 20))]
    header = "id,name,region,amount"
    csv_text = header + "\n" + "".join(f"{i},{name},{region},{amount}\n" for i, name, region, amount in rows)
    files = {DATA: csv_text}
    if level is Difficulty.EASY:
        total = sum(amount for *_, amount in rows)
        return FamilyTask(
            "Column total",
            f"Write the sum of the amount column of {DATA} (an integer) alone to /app/total.txt.",
            files,
            pytest_file(
                read_text_helper(),
                """
                def test_total_file_exists():
                    assert os.path.isfile("/app/total.txt")""",
                f'''
                def test_total_is_correct():
                    assert read("/app/total.txt").strip() == "{total}"''',
            ),
            {"test_total_file_exists": 0.2, "test_total_is_correct": 0.8},
            f"awk -F, 'NR > 1 {{ s += $4 }} END {{ print s }}' {DATA} > /app/total.txt\n",
            ("aggregate",),
        )
    if level is Difficulty.MEDIUM:
        region = rng.choice(sorted({r for _, _, r, _ in rows}))
        expected = [line for line in csv_text.splitlines()[1:] if line.split(",")[2] == region]
        return FamilyTask(
            f"Rows of {region}",
            f"Write /app/{region}.csv: the header of {DATA} and, in their original order, "
            f"only its rows whose region is {region}.",
            files,
            pytest_file(
                read_text_helper(),
                f'''
                def test_header_kept():
                    assert read("/app/{region}.csv").splitlines()[0] == "{header}"''',
                f"""
                def test_rows_are_exactly_the_region():
                    assert read("/app/{region}.csv").splitlines()[1:] == {expected!r}""",
            ),
            {"test_header_kept": 0.3, "test_rows_are_exactly_the_region": 0.7},
            f"awk -F, 'NR == 1 || $3 == \"{region}\"' {DATA} > /app/{region}.csv\n",
            ("filter",),
        )
    sums: dict[str, int] = defaultdict(int)
    for _, _, region, amount in rows:
        sums[region] += amount
    return FamilyTask(
        "Sums by region",
        f"Write /app/by_region.json: a JSON object mapping each region in {DATA} to the sum of its amounts (integers).",
        files,
        pytest_file(
            """
            def load():
                with open("/app/by_region.json", encoding="utf-8") as handle:
                    return json.load(handle)""",
            f"""
            def test_every_region_present():
                assert sorted(load()) == {sorted(sums)!r}""",
            f"""
            def test_sums_are_correct():
                assert load() == {dict(sums)!r}""",
        ),
        {"test_every_region_present": 0.4, "test_sums_are_correct": 0.6},
        "python3 - <<'PY'\nimport csv, json\nsums = {}\nfor row in csv.DictReader(open('/app/data.csv')):\n"
        "    sums[row['region']] = sums.get(row['region'], 0) + int(row['amount'])\n"
        "json.dump(sums, open('/app/by_region.json', 'w'))\nPY\n",
        ("group-by",),
    )
