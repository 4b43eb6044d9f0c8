"""dist_async argument errors (run by tests/kvstore/test_kvstore_dist.py): with servers, bad
calls raise on the worker and leave the servers' values alone; without servers,
create says how to launch."""
import os
import sys

import numpy
import pytest

import minpy as np
import minpy.nn  # noqa: F401


def scale_update(key, grad, stored):
    stored[...] = stored - 2 * grad


def main():
    if os.environ.get("MINPY_KVSTORE_SERVERS", "0") == "0":
        with pytest.raises(ValueError, match=r"no server ranks; launch it with python -m "
                                             r"minpy.kvstore.launch -n WORKERS --servers S"):
            np.kvstore.create("dist_async")
        print("refused")
        return
    kv = np.kvstore.create("dist_async")
    kv.init("w", np.array([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match=r"the updater runs on the server ranks and must be "
                                        r"picklable"):
        kv.set_updater(lambda k, g, w: None)
    with pytest.raises(KeyError, match=r"key 'v' was not initialised"):
        kv.push("v", np.ones(3))
    with pytest.raises(ValueError, match=r"key 'w' holds shape \(3,\), got an array of shape"):
        kv.push("w", np.ones(4))
    with pytest.raises(ValueError, match=r"key 'w' holds shape \(3,\)"):
        kv.pull("w", out=np.ones((1, 3)))
    out = np.zeros(3)
    kv.pull("w", out=out)
    numpy.testing.assert_array_equal(out.asnumpy(), [1, 2, 3])
    kv.set_updater(scale_update)            # a module-level function travels
    kv.push("w", np.ones(3))
    kv.pull("w", out=out)
    numpy.testing.assert_array_equal(out.asnumpy(), [-1, 0, 1])
    print("checked")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
