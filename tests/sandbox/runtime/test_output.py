from terminal_rl.sandbox.runtime.output import OutputCapture, sanitize


def test_small_output_is_kept_whole():
    capture = OutputCapture(head_bytes=10, tail_bytes=10)
    capture.write(b"hello ")
    capture.write(b"world")
    assert capture.text() == "hello world"
    assert capture.elided_bytes == 0


def test_large_output_keeps_head_and_tail_with_marker():
    capture = OutputCapture(head_bytes=4, tail_bytes=3)
    for _ in range(1000):
        capture.write(b"0123456789")
    assert capture.total_bytes == 10_000
    assert capture.text() == "0123\n[... 9993 bytes of output elided ...]\n789"
    assert len(capture.tail) <= 2 * 3 + 10


def test_sanitize_binary_ansi_and_controls():
    assert sanitize(b"\x1b[31mred\x1b[0m ok\r\n") == "red ok\n"
    assert sanitize(b"a\x00b\xff\x07c\td") == "a\ufffdb\ufffd\ufffdc\td"
    assert sanitize("héllo ✓".encode()) == "héllo ✓"
