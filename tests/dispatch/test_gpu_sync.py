"""Synchronisation with the GPU's queued work: ``minpy.waitall()`` synchronises every
device, ``Array.wait_to_read()`` the array's own, ``Executor.forward``/``backward``
(which return ready results) the executor's; checked on the stand-in GPU, whose
``synchronize`` records the device ids it is given (None: every device)."""
import numpy as np
import pytest

import minpy
import minpy.symbol as sym

from _standin import installed


@pytest.fixture
def gpu():
    with installed() as backend:
        yield backend


def test_waitall_synchronises_every_device(gpu):
    a = minpy.ones((3,)).copyto(minpy.gpu(1))
    gpu.syncs.clear()
    minpy.waitall()
    assert gpu.syncs == [None]
    np.testing.assert_array_equal(a.asnumpy(), np.ones(3))


def test_waitall_without_a_gpu_needs_no_backend():
    prev = minpy.dispatch.set_gpu_backend(None)
    try:
        minpy.waitall()
    finally:
        minpy.dispatch.set_gpu_backend(prev)


def test_leaving_async_mode_synchronises_every_device(gpu):
    with minpy.async_mode():
        gpu.syncs.clear()
    assert None in gpu.syncs


def test_wait_to_read_synchronises_the_arrays_own_device(gpu):
    on1 = minpy.arange(4.0).copyto(minpy.gpu(1))
    on0 = minpy.arange(4.0).copyto(minpy.gpu(0))
    host = minpy.arange(4.0)
    gpu.syncs.clear()
    assert on1.wait_to_read() is on1
    on0.wait_to_read()
    host.wait_to_read()
    assert gpu.syncs == [1, 0]


def _exe(ctx):
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=3, name="fc")
    return net.simple_bind(ctx, data=(2, 4), type_dict={"data": np.float64})


def test_executor_forward_and_backward_synchronise_their_device(gpu):
    exe = _exe(minpy.gpu(1))
    gpu.syncs.clear()
    exe.forward(is_train=True, data=np.ones((2, 4)))
    assert gpu.syncs == [1]
    exe.backward()
    assert gpu.syncs == [1, 1]
    exe.forward(is_train=True)
    gpu.syncs.clear()
    exe.backward(wait=False)            # MXNet's asynchronous backward: no wait at all
    assert gpu.syncs == []
    exe.grad_dict["fc_weight"].wait_to_read()
    assert gpu.syncs == [1]
    np.testing.assert_array_equal(exe.grad_dict["fc_weight"].asnumpy(), np.full((3, 4), 2.0))


def test_executor_on_the_cpu_does_not_synchronise_a_device(gpu):
    exe = _exe(minpy.cpu())
    gpu.syncs.clear()
    exe.forward(is_train=True, data=np.ones((2, 4)))
    exe.backward()
    assert gpu.syncs == []
