"""Procedural task families: code that writes tasks, correct by construction (see ``base.py``)."""

from terminal_rl.tasks.families import (
    config_fix,
    csv_report,
    file_rename,
    inbox_value,
    ledger_sum,
    log_filter,
    shell_script,
    slow_check,
    write_value,
)

FAMILIES = {
    module.NAME: module
    for module in (
        log_filter,
        file_rename,
        csv_report,
        shell_script,
        config_fix,
        write_value,
        ledger_sum,
        slow_check,
        inbox_value,
    )
}
