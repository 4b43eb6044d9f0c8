"""kvstore.create with a rank that stalls before it (tests/kvstore/test_no_silent_jobs.py): the
last rank sleeps instead of creating the store; the others must fail within
MINPY_KVSTORE_TIMEOUT with an error naming kvstore.create, the missing rank and the
timeout, and the job end, instead of every rank blocking in the setup for ever."""
import sys
import time

from mpi4py import MPI

import minpy

world = MPI.COMM_WORLD
kind = sys.argv[1]
if world.Get_rank() == world.Get_size() - 1:
    time.sleep(60)                              # stalls before create
    print(f"rank {world.Get_rank()}: NOT ENDED", flush=True)
kv = minpy.kvstore.create(kind)
print(f"rank {world.Get_rank()}: created", flush=True)
