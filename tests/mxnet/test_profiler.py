"""mx.profiler (MXNet 1.x's profiler over what minpy runs): MXNet 1.9.1's
tests/python/unittest/test_profiler.py basics, the Chrome trace file and the
aggregate statistics, and that the times are measured."""
import json
import os
import time
from collections import OrderedDict

import numpy as np
import pytest

import minpy.mxnet as mx
from minpy.mxnet import profiler


@pytest.fixture(autouse=True)
def clean_profiler(tmp_path, monkeypatch):
    """Each test in a temporary folder, starting and ending with a stopped profiler with
    no events nor statistics."""
    monkeypatch.chdir(tmp_path)
    yield
    profiler.set_state('stop')
    profiler.pause()
    profiler.resume()
    profiler.dumps(reset=True)
    profiler.set_config(filename=str(tmp_path / "drain.json"), aggregate_stats=False,
                        profile_symbolic=False, profile_all=False)
    profiler.dump(True)


def enable_profiler(profile_filename, run=True, continuous_dump=False, aggregate_stats=False):
    profiler.set_config(profile_symbolic=True,
                        filename=profile_filename,
                        continuous_dump=continuous_dump,
                        aggregate_stats=aggregate_stats)
    if run is True:
        profiler.set_state('run')


def _trace(path):
    with open(path) as f:
        return json.load(f)


def _dot_executor(n=64):
    A = mx.sym.Variable('A')
    B = mx.sym.Variable('B')
    C = mx.symbol.dot(A, B)
    executor = C.simple_bind(mx.cpu(), 'write', A=(n, n), B=(n, n))
    executor.arg_dict['A'][:] = np.random.RandomState(0).uniform(-1, 1, (n, n))
    executor.arg_dict['B'][:] = np.random.RandomState(1).uniform(-1, 1, (n, n))
    return executor


def test_profiler():
    """MXNet's test_profiler: iterations 2 and 3 of 5 are profiled."""
    iter_num, begin_profiling_iter, end_profiling_iter = 5, 2, 4
    enable_profiler('test_profiler.json', False, False)
    executor = _dot_executor()
    for i in range(iter_num):
        if i == begin_profiling_iter:
            profiler.set_state('run')
        if i == end_profiling_iter:
            profiler.set_state('stop')
        executor.forward()
        executor.outputs[0].wait_to_read()
    profiler.dump(True)
    events = _trace('test_profiler.json')
    assert events["displayTimeUnit"] == "ms"
    ops = [e for e in events["traceEvents"] if e.get("cat") == "operator"]
    assert [(e["name"], e["ph"]) for e in ops] == [("dot", "B"), ("dot", "E")] * 2
    assert all(end["ts"] >= begin["ts"] for begin, end in zip(ops[::2], ops[1::2]))
    meta = [e for e in events["traceEvents"] if e["ph"] == "M"]
    assert {"name": "process_name", "ph": "M", "args": {"name": "cpu/0"},
            "pid": ops[0]["pid"]} in meta


def test_profile_create_domain_dept():
    profiler.set_config(profile_symbolic=True, filename='test_profile_create_domain_dept.json')
    profiler.set_state('run')
    domain = profiler.Domain(name='PythonDomain')
    assert str(domain) == 'PythonDomain'
    profiler.dump()
    profiler.set_state('stop')
    assert os.path.exists('test_profile_create_domain_dept.json')


def _work():
    var = mx.nd.ones((1000, 500))
    var.asnumpy()


def test_profile_task_frame_event():
    enable_profiler('test_profile_task.json')
    python_domain = profiler.Domain('PythonDomain::test_profile_task')
    task = profiler.Task(python_domain, "test_profile_task")
    frame = python_domain.new_frame("test_profile_frame")
    event = profiler.Event("test_profile_event")
    task.start()
    frame.start()
    event.start()
    _work()
    event.stop()
    frame.stop()
    task.stop()
    profiler.set_state('stop')
    profiler.dump()
    got = {(e["name"], e["cat"], e["ph"]) for e in _trace('test_profile_task.json')["traceEvents"]
           if e["ph"] != "M"}
    assert got == {("test_profile_task", "PythonDomain::test_profile_task", "b"),
                   ("test_profile_task", "PythonDomain::test_profile_task", "e"),
                   ("test_profile_frame", "PythonDomain::test_profile_task,frame", "("),
                   ("test_profile_frame", "PythonDomain::test_profile_task,frame", ")"),
                   ("test_profile_event", "event", "B"), ("test_profile_event", "event", "E")}
    with pytest.raises(RuntimeError, match="Event.stop: 'test_profile_event' was not started"):
        event.stop()


def test_profile_tune_pause_resume():
    enable_profiler('test_profile_tune_pause_resume.json')
    profiler.pause()
    # "test_profile_task" should *not* show up
    with profiler.Task(profiler.Domain('PythonDomain'), "test_profile_task"):
        _work()
    profiler.resume()
    # "test_profile_event" should show up
    with profiler.Event("test_profile_event"):
        _work()
    profiler.pause()
    profiler.set_state('stop')
    profiler.dump()
    names = {e["name"] for e in _trace('test_profile_tune_pause_resume.json')["traceEvents"]}
    assert "test_profile_event" in names and "test_profile_task" not in names


def test_profile_counter():
    enable_profiler('test_profile_counter.json')
    python_domain = profiler.Domain('PythonDomain::test_profile_counter')
    counter = profiler.Counter(python_domain, "PythonCounter::test_profile_counter")
    counter.set_value(5)
    counter += 1
    for i in range(10):
        if i < 6:
            counter += 1
        else:
            counter -= 1
    counter.decrement(2)
    profiler.set_state('stop')
    profiler.dump()
    values = [e["args"]["PythonCounter::test_profile_counter"]
              for e in _trace('test_profile_counter.json')["traceEvents"] if e["ph"] == "C"]
    assert values == [5, 6, 7, 8, 9, 10, 11, 12, 11, 10, 9, 8, 6]


def test_continuous_profile_and_instant_marker():
    file_name = 'test_continuous_profile_and_instant_marker.json'
    enable_profiler(file_name, True, True, True)
    python_domain = profiler.Domain('PythonDomain::test_continuous_profile')
    last_file_size = 0
    for i in range(5):
        profiler.Marker(python_domain, "StartIteration-" + str(i)).mark('process')
        with profiler.Event("test_profile_event"):
            _work()
        profiler.dump(False)
        # File size should keep increasing
        new_file_size = os.path.getsize(file_name)
        assert new_file_size >= last_file_size
        last_file_size = new_file_size
    profiler.dump(False)
    debug_str = profiler.dumps()
    assert "test_profile_event" in debug_str
    profiler.set_state('stop')
    markers = [e for e in _trace(file_name)["traceEvents"] if e["ph"] == "n"]
    assert [m["name"] for m in markers] == [f"StartIteration-{i}" for i in range(5)]
    assert {m["s"] for m in markers} == {"p"}


def test_aggregate_stats_valid_json_return():
    enable_profiler('test_aggregate_stats_json_return.json', True, True, True)
    with profiler.Event("test_profile_event"):
        _work()
    target_dict = json.loads(profiler.dumps(format='json'))
    assert 'Memory' in target_dict and 'Time' in target_dict and 'Unit' in target_dict
    assert target_dict['Time']['event']['test_profile_event']['Count'] == 1
    profiler.set_state('stop')


def test_aggregate_stats_sorting():
    sort_by_options = {'total': 'Total', 'avg': 'Avg', 'min': 'Min', 'max': 'Max',
                       'count': 'Count'}
    enable_profiler('test_aggregate_stats_sorting.json', True, True, True)
    executor = _dot_executor()
    domain = profiler.Domain('sorting')
    for i in range(4):
        with profiler.Task(domain, f"task{i % 3}"):
            time.sleep(0.001 * (i + 1))
            executor.forward()
    for sb in sort_by_options:
        for asc in (False, True):
            target_dict = json.loads(profiler.dumps(format='json', sort_by=sb, ascending=asc),
                                     object_pairs_hook=OrderedDict)
            for domain_stats in target_dict['Time'].values():
                lst = [item[sort_by_options[sb]] for item in domain_stats.values()]
                assert lst == sorted(lst, reverse=not asc)
    assert list(target_dict['Time']) == ['operator', 'sorting']
    profiler.set_state('stop')


def test_aggregate_counts_executor_operators():
    """MXNet's test_aggregate_duplication, with executor operators (profile_symbolic)."""
    enable_profiler('test_aggregate_duplication.json', True, True, True)
    profiler.dumps(reset=True)
    x = mx.sym.Variable('x')
    exe = mx.sym.sqrt(x).simple_bind(mx.cpu(), x=(100, 100))
    exe2 = ((x + 1) + 1).simple_bind(mx.cpu(), x=(100, 100))
    exe.forward()
    exe.forward()
    exe2.forward()
    target_dict = json.loads(profiler.dumps(format='json'))
    ops = target_dict['Time']['operator']
    assert ops['sqrt']['Count'] == 2
    # what minpy runs: the two additions fused into one elementwise kernel
    assert ops['_FusedElemwise']['Count'] == 1 and '_plus_scalar' not in ops
    table = profiler.dumps(reset=True)
    assert "\noperator\n=================\nName                          Total Count" in table
    assert "\nsqrt                                    2 " in table
    assert json.loads(profiler.dumps(format='json'))['Time'] == {}


def test_times_are_measured():
    """A duration holds the time that passed (no made-up numbers); an operator's time is
    inside the forward call's."""
    enable_profiler('test_times.json', True, False, True)
    with profiler.Event("sleep"):
        time.sleep(0.03)
    executor = _dot_executor(256)
    t0 = time.perf_counter()
    executor.forward()
    wall_ms = (time.perf_counter() - t0) * 1000
    stats = json.loads(profiler.dumps(format='json'))['Time']
    assert 30 <= stats['event']['sleep']['Total'] < 3000
    assert 0 < stats['operator']['dot']['Total'] <= wall_ms + 0.01


def test_stopped_profiler_records_nothing_and_config_errors():
    enable_profiler('test_stopped.json', False, False, True)
    executor = _dot_executor()
    executor.forward()
    with profiler.Event("not recorded"):
        pass
    assert json.loads(profiler.dumps(format='json'))['Time'] == {}
    with pytest.raises(ValueError, match="unknown keyword"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(ValueError, match="'run' or 'stop'"):
        profiler.set_state('go')
    with pytest.raises(NotImplementedError, match="only the worker"):
        profiler.set_state('run', profile_process='server')
    with pytest.raises(ValueError, match="sort_by"):
        profiler.dumps(sort_by='median')
    with pytest.warns(UserWarning, match="not recorded by minpy"):
        profiler.set_config(profile_memory=True, filename='x.json')
    profiler.set_config(profile_memory=False)


def test_imperative_operators_are_recorded():
    """MXNet's profile_imperative: mx.nd's operator calls, inline and pushed (async mode)."""
    import minpy
    profiler.set_config(profile_symbolic=False, profile_imperative=True,
                        aggregate_stats=True, filename='test_imperative.json')
    profiler.set_state('run')
    profiler.dumps(reset=True)
    try:
        x = mx.nd.ones((64, 32))
        w = mx.nd.ones((16, 32))
        mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=16)
        with minpy.async_mode():
            y = mx.nd.relu(mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=16))
            y.wait_to_read()
        ops = json.loads(profiler.dumps(format='json'))['Time']['operator']
    finally:
        profiler.set_state('stop')
        profiler.set_config(profile_imperative=False)
    assert ops['FullyConnected']['Count'] == 2 and ops['relu']['Count'] == 1
    profiler.dumps(reset=True)
    mx.nd.relu(mx.nd.ones(3))                 # stopped: nothing
    assert json.loads(profiler.dumps(format='json'))['Time'] == {}


def test_gpu_operators_are_timed_to_the_end_of_their_kernels():
    """On the stand-in GPU's gpu(1): operator events under process 'gpu/1', the device
    synchronised after each operator while recording (and not when stopped)."""
    from _standin import installed
    with installed() as backend:
        enable_profiler('test_gpu.json', True, False, True)
        net = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=3)
        exe = net.simple_bind(mx.gpu(1), data=(2, 4), grad_req="null")
        before = len(backend.syncs)
        exe.forward()
        recorded = len(backend.syncs) - before
        profiler.set_state('stop')
        before = len(backend.syncs)
        exe.forward()
        assert recorded == len(backend.syncs) - before + 1     # one more: after fc's step
    profiler.dump()
    events = _trace('test_gpu.json')["traceEvents"]
    pid = next(e["pid"] for e in events if e["ph"] == "M" and e["args"]["name"] == "gpu/1")
    assert [(e["name"], e["pid"]) for e in events if e.get("cat") == "operator"] == \
        [("FullyConnected", pid)] * 2
