"""File tools (real file transfers) and the keystroke terminal against a real container."""

import pytest

from terminal_rl.sandbox.runtime.files import FileToolError

pytestmark = [pytest.mark.docker, pytest.mark.both_engines]

TRICKY = "line 1 with 'single' and \"double\" quotes\n$(rm -rf /) `backticks` \\ back\\slash\nünïcödé ✓\n"


def test_write_read_edit_stat_list(in_sandbox):
    async def steps(sandbox):
        await sandbox.files.write_text("/work/deep/dir/it's here.txt", TRICKY)
        whole = await sandbox.files.read_text("/work/deep/dir/it's here.txt")
        middle = await sandbox.files.read_text("/work/deep/dir/it's here.txt", 2, 2)
        count = await sandbox.files.edit("/work/deep/dir/it's here.txt", "ünïcödé ✓", "edited")
        edited = await sandbox.files.read_text("/work/deep/dir/it's here.txt")
        stat = await sandbox.files.stat("/work/deep/dir/it's here.txt")
        listing = await sandbox.files.list_dir("/work/deep/dir")
        shell_view = await sandbox.run('cat "/work/deep/dir/it\'s here.txt"', timeout=10)
        await sandbox.files.write_bytes("/work/blob.bin", bytes(range(256)))
        blob = await sandbox.files.read_bytes("/work/blob.bin")
        return whole, middle, count, edited, stat, listing, shell_view, blob

    whole, middle, count, edited, stat, listing, shell_view, blob = in_sandbox(steps)
    assert whole == TRICKY
    assert middle == "$(rm -rf /) `backticks` \\ back\\slash\n"
    assert count == 1 and edited.endswith("edited\n")
    assert shell_view.output == edited
    assert (stat.kind, stat.size, stat.mode) == ("file", len(edited.encode()), 0o644)
    assert [(e.path, e.kind) for e in listing] == [("/work/deep/dir/it's here.txt", "file")]
    assert blob == bytes(range(256))


def test_file_tool_errors_say_what_is_wrong(in_sandbox, sandbox_config):
    cap = sandbox_config.session.file_max_bytes

    async def steps(sandbox):
        await sandbox.run(f"head -c {cap + 1} /dev/zero > /big; printf 'a\\na\\n' > /twice", timeout=10)
        errors = []
        for attempt in (
            sandbox.files.read_text("/missing.txt"),
            sandbox.files.read_text("/big"),
            sandbox.files.read_text("/etc"),
            sandbox.files.edit("/twice", "a", "b"),
            sandbox.files.edit("/twice", "zzz", "b"),
            sandbox.files.write_bytes("/x", b"0" * (cap + 1)),
        ):
            with pytest.raises(FileToolError) as caught:
                await attempt
            errors.append(str(caught.value))
        return errors

    assert in_sandbox(steps) == [
        "/missing.txt does not exist",
        f"/big is {cap + 1} bytes, more than the {cap}-byte limit; read part of it with bash (head, tail, sed -n "
        "'A,Bp')",
        "/etc is a directory; list it instead",
        "old text occurs 2 times in /twice; give more context to make it unique, or replace all",
        "old text not found in /twice",
        f"content is {cap + 1} bytes, more than the {cap}-byte limit",
    ]


def test_files_written_before_the_agent_starts(in_sandbox):
    async def steps(sandbox):
        return await sandbox.run("cat /etc/motd.d/hello notes/relative.txt", timeout=10)

    result = in_sandbox(steps, files={"/etc/motd.d/hello": b"abs\n", "notes/relative.txt": b"rel\n"})
    assert result.output == "abs\nrel\n"


def test_keystrokes_control_keys_and_screen(in_sandbox):
    async def steps(sandbox):
        terminal = sandbox.terminal
        await terminal.send_keys("export PS1='$ '; clear\n", wait_sec=0.3)
        echoed = await terminal.send_keys("echo typed-$((6*7))\n", wait_sec=0.3)
        await terminal.send_keys("sleep 100\n", wait_sec=0.3)
        interrupted = await terminal.send_keys("C-c", wait_sec=0.3)
        after = await terminal.send_keys("echo back\n", wait_sec=0.3)
        return echoed, interrupted, after

    echoed, interrupted, after = in_sandbox(steps)
    assert "typed-42" in echoed.splitlines()
    assert "^C" in interrupted
    assert after.splitlines()[-2:] == ["back", "$ "]
