"""The persistent shell session against a real container."""

import asyncio
import unicodedata

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.both_engines]


def test_commands_keep_cwd_and_environment_like_a_terminal(in_sandbox):
    async def steps(sandbox):
        return [
            await sandbox.run(c, timeout=10)
            for c in (
                "mkdir -p /work/a && cd /work/a && export GREETING='hi there' && touch here",
                'pwd; echo "$GREETING"; ls',
                "cd .. && pwd",
                "pwd",
            )
        ]

    results = in_sandbox(steps)
    assert [r.exit_code for r in results] == [0, 0, 0, 0]
    assert results[1].output == "/work/a\nhi there\nhere\n"
    assert results[3].output == "/work\n"


def test_exit_codes_stderr_and_quotes(in_sandbox):
    async def steps(sandbox):
        return [
            await sandbox.run(c, timeout=10)
            for c in (
                "exit 7",
                "echo out; echo err >&2; false",
                """printf '%s|' "a'b" 'c"d' $'e\\nf'""",
                "echo -n no-newline",
                "cat <<'EOF'\n$HOME stays literal\nEOF",
            )
        ]

    exit7, mixed, quotes, newline, heredoc = in_sandbox(steps)
    assert exit7.exit_code == 7
    assert (mixed.exit_code, mixed.output) == (1, "out\nerr\n")
    assert quotes.output == "a'b|c\"d|e\nf|"
    assert newline.output == "no-newline"
    assert heredoc.output == "$HOME stays literal\n"


def test_timeout_kills_the_command_and_its_children_but_keeps_the_session(in_sandbox):
    async def steps(sandbox):
        looping = await sandbox.run("export KEEP=1; while true; do :; done", timeout=1)
        children = await sandbox.run("sleep 300 & sleep 301 & yes > /dev/null", timeout=1)
        leftovers = await sandbox.run("pgrep -c -f 'sleep 30[01]|yes' || true", timeout=10)
        after = await sandbox.run("echo still here", timeout=10)
        return looping, children, leftovers, after

    looping, children, leftovers, after = in_sandbox(steps)
    assert looping.timed_out and looping.exit_code == 137
    assert looping.output.endswith("[command timed out after 1s and was killed]")
    assert 1.0 <= looping.duration_sec < 5
    assert children.timed_out
    assert leftovers.output.strip() == "0"
    assert (after.exit_code, after.output) == (0, "still here\n")


def test_background_services_survive_their_command(in_sandbox):
    async def steps(sandbox):
        await sandbox.run("nohup python3 -m http.server 8765 >/dev/null 2>&1 &", timeout=10)
        await asyncio.sleep(1)
        return await sandbox.run("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/", timeout=10)

    assert in_sandbox(steps).output == "200"


def test_infinite_output_is_capped_and_the_session_survives(in_sandbox, sandbox_config):
    async def steps(sandbox):
        yes = await sandbox.run("yes", timeout=2)
        big = await sandbox.run("head -c 100000000 /dev/zero | tr '\\0' a", timeout=60)
        binary = await sandbox.run("head -c 4096 /dev/urandom", timeout=10)
        after = await sandbox.run("echo ok", timeout=10)
        return yes, big, binary, after

    yes, big, binary, after = in_sandbox(steps)
    limit = sandbox_config.session.output_head_bytes + sandbox_config.session.output_tail_bytes
    assert yes.timed_out and yes.output_bytes > 1_000_000
    assert len(yes.output.encode()) < limit + 200
    assert big.exit_code == 0 and big.output_bytes == 100_000_000
    assert f"[... {100_000_000 - limit} bytes of output elided ...]" in big.output
    assert not [ch for ch in binary.output if unicodedata.category(ch) == "Cc" and ch not in "\n\t\r"]
    assert after.output == "ok\n"


def test_unicode_and_large_commands(in_sandbox):
    body = "x" * 200_000

    async def steps(sandbox):
        unicode = await sandbox.run("echo 'héllo ✓ 日本'", timeout=10)
        large = await sandbox.run(f"echo {body} | wc -c", timeout=30)
        return unicode, large

    unicode, large = in_sandbox(steps)
    assert unicode.output == "héllo ✓ 日本\n"
    assert large.output.strip() == str(len(body) + 1)
