"""Every benchmark has a ``--quick`` mode that ``.ci/bench_quick`` runs, so none rots
unseen: a new ``benchmarks/bench_*.py`` without one fails here.  Nothing is run but the
runner's ``--list`` (its commands, as it derives them)."""
import pathlib
import re
import subprocess
import sys

import numpy
import pytest

import minpy
import minpy.symbol as sym

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUNNER = ROOT / ".ci" / "bench_quick"
SCRIPTS = sorted((ROOT / "benchmarks").glob("bench_*.py"))


def _commands():
    """``{script path as the runner names it: its quick command}`` from ``--list``."""
    r = subprocess.run(["bash", str(RUNNER), "--list"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return dict(line.split(": ", 1) for line in r.stdout.splitlines())


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 15


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_has_a_quick_flag(script):
    src = script.read_text()
    assert re.search(r"""add_argument\(\s*["']--quick["']""", src), \
        f"{script.name}: no --quick option (tiny sizes, one repeat, absent peers skipped)"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_quick_line_runs_the_script_itself_in_quick_mode(script):
    lines = script.read_text().splitlines()
    quick = [i for i, line in enumerate(lines) if line.startswith("# quick:")]
    assert len(quick) <= 1, f"{script.name}: more than one '# quick:' line"
    if quick:
        assert quick[0] < 5, f"{script.name}: the runner reads '# quick:' in the first 5 lines"
        cmd = lines[quick[0]].split(":", 1)[1].split()
        assert f"benchmarks/{script.name}" in cmd and "--quick" in cmd, lines[quick[0]]


def test_runner_covers_every_benchmark_with_its_quick_command():
    commands = _commands()
    assert sorted(commands) == [f"benchmarks/{p.name}" for p in SCRIPTS]
    for script, cmd in commands.items():
        words = cmd.split()
        assert script in words and "--quick" in words, (script, cmd)
    assert commands["benchmarks/bench_executor.py"] == \
        "python benchmarks/bench_executor.py --quick"
    assert "minpy.kvstore.launch" in commands["benchmarks/bench_kvstore.py"]


def test_runner_is_strict_bash_with_timeouts():
    text = RUNNER.read_text()
    assert "set -euo pipefail" in text and "timeout " in text
    assert "benchmarks/bench_*.py" in text       # a new benchmark is picked up by the glob
    r = subprocess.run(["bash", "-n", str(RUNNER)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------ bench_executor's graph walk
@pytest.fixture(scope="module")
def bench_executor():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_executor as module
    finally:
        sys.path.pop(0)
    return module


@pytest.mark.parametrize("net", ["lenet", "resnet20"])
def test_executor_bench_walks_the_graph_as_the_executor_runs_it(bench_executor, net):
    """run_graph reads MXNet JSON ([node, index, version] inputs, string attributes such as
    "(5, 5)") into the same network minpy's Function computes."""
    if net == "lenet":
        symbol, logits_name, shape = sym.zoo.lenet(), "fc2_output", (2, 1, 28, 28)
    else:
        symbol, logits_name, shape = (sym.zoo.resnet(20, 10, image_shape=(3, 32, 32)),
                                      "fc1_output", (2, 3, 32, 32))
    logits = symbol.get_internals()[logits_name]
    f = sym.function(logits, {"data": shape}, name=net)
    params = f.get_params(seed=0)
    x = minpy.array(numpy.random.default_rng(0).standard_normal(shape).astype(numpy.float32))
    aux = {k: minpy.array(v.asnumpy()) for k, v in f.aux_params.items()}
    walked = bench_executor.run_graph(symbol, bench_executor.MINPY_OPS,
                                      dict(params, data=x, **aux))
    want = f(data=x, is_train=True, **params)     # BatchNorm on the batch, as run_graph
    assert walked.shape == want.shape == (shape[0], 10)
    numpy.testing.assert_allclose(walked.asnumpy(), want.asnumpy(), rtol=1e-4, atol=1e-5)


def test_executor_bench_refuses_parameters_it_does_not_implement(bench_executor):
    net = sym.Convolution(sym.Variable("data"), kernel=(3, 3), num_filter=2, dilate=(2, 2),
                          name="c")
    with pytest.raises(NotImplementedError, match="run_graph: Convolution 'c'.*dilate"):
        bench_executor.run_graph(net, bench_executor.MINPY_OPS, {})
