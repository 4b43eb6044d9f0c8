"""Waits shared by the job scripts: each gives up after ``WAIT`` seconds and prints
``NOT ENDED``, so a job the launcher failed to end shows up in the test's output."""
import time

WAIT = 30


def wait_for(comm, source):
    """Wait (without spinning) for a message from ``source`` that never comes."""
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        if comm.Iprobe(source=source):
            return
        time.sleep(0.05)
    print(f"rank {comm.Get_rank()}: NOT ENDED after {WAIT} s", flush=True)


def sleep_out(comm):
    """Sleep until ``WAIT`` seconds have passed (the launcher should end us first)."""
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        time.sleep(0.1)
    print(f"rank {comm.Get_rank()}: NOT ENDED after {WAIT} s", flush=True)
