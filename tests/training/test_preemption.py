"""The save on Slurm's signal, between the job's head and the trainer (two processes, one shared
directory): the head's request is answered with the step the trainer saved, a silent trainer
does not hold the requeue past the delay, and a new attempt starts with no request pending."""

import threading
import time

from terminal_rl.training.preemption import acknowledge, clear, request_save, save_requested, wait_for_save


def answer_when_asked(folder, step: int, poll_sec: float) -> None:
    """A trainer in a thread: it ends its step, sees the request, saves and answers with ``step``."""

    def trainer():
        while not save_requested(folder):
            time.sleep(poll_sec)
        acknowledge(folder, step)

    threading.Thread(target=trainer).start()


def test_the_head_waits_for_the_trainers_save_of_its_current_step(tmp_path):
    answer_when_asked(tmp_path, 7, poll_sec=0.01)
    request_save(tmp_path)
    assert wait_for_save(tmp_path, 5, poll_sec=0.01) == 7
    assert not save_requested(tmp_path)


def test_a_trainer_that_does_not_answer_does_not_hold_the_requeue(tmp_path):
    request_save(tmp_path)
    started = time.monotonic()
    assert wait_for_save(tmp_path, 0.2, poll_sec=0.05) is None and time.monotonic() - started < 1


def test_a_new_attempt_starts_with_no_request_and_an_old_answer_is_not_taken(tmp_path):
    request_save(tmp_path)
    acknowledge(tmp_path, 3)
    request_save(tmp_path)  # a second signal: the answer to the first is not the answer to it
    assert wait_for_save(tmp_path, 0.1, poll_sec=0.05) is None
    clear(tmp_path)
    assert not save_requested(tmp_path)


def test_the_head_never_reads_a_half_written_answer(tmp_path):
    """The head polls while the trainer writes: it sees no answer or the whole step (a plain write let
    it read an empty file, 29 times in 300 such races before the write was made atomic)."""
    for attempt in range(200):
        folder = tmp_path / str(attempt)
        answer_when_asked(folder, 7, poll_sec=0.0001)
        request_save(folder)
        assert wait_for_save(folder, 5, poll_sec=0.0001) == 7
