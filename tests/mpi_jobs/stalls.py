"""A dist_sync job whose last rank stops pushing (tests/kvstore/test_kvstore_dist.py): the
others time out with an error naming the key and the rank, and the job ends."""
import sys
import time

import minpy
import minpy as np

mode = sys.argv[1]
kv = minpy.kvstore.create("dist_sync")
kv.init("w", np.zeros(4))
out = np.zeros(4)
for step in range(4):
    if step == 2 and kv.rank == kv.num_workers - 1:
        if mode == "dies":
            sys.stdout.flush()
            import os
            os._exit(3)                          # killed: no MPI_Finalize, no abort
        time.sleep(60)                           # stalls: never pushes again
    kv.push("w", np.ones(4))
    kv.pull("w", out=out)
print(f"rank {kv.rank} finished", flush=True)
