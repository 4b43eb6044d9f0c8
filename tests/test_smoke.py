"""The package's front: ``import minpy as mp``, and every public import path."""
import functools
import subprocess
import sys

import numpy

import minpy
import minpy as mp


def test_expression_matches_numpy():
    xn = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    x = mp.array(xn)
    r = x * x + 1
    assert isinstance(r, mp.Array)
    numpy.testing.assert_array_equal(r.asnumpy(), xn * xn + 1)
    assert r.dtype == numpy.float32


def test_numpy_protocols():
    x = mp.arange(4.0)
    assert isinstance(numpy.mean(x), numpy.float64)      # NumPy's functions answer in NumPy
    assert isinstance(numpy.exp(x), mp.Array)            # ufuncs and operators stay in minpy
    assert numpy.shares_memory(numpy.asarray(x), numpy.asarray(x))    # no copy
    assert not numpy.shares_memory(x.asnumpy(), numpy.asarray(x))      # MXNet's: a copy


# ---------------------------------------------------------------- import paths
# Every public import path the package had before issue 26 re-laid it, with the names it
# exported, and what each must be: MinPy's, MXNet's and NumPy's module names (one real
# module each, see minpy.compat), minpy.core's and minpy.numpy's MinPy names.
OLD_PATHS = {
    "minpy": (["array", "grad", "set_global_policy", "get_global_policy", "wrap_policy",
               "init", "sym"], "assert m.init is m.initializer"),
    "minpy.array": (["Array", "Number", "Value", "wrap"],
                    "assert m([1, 2]).tolist() == [1, 2] and minpy.array is m"),
    "minpy.array_variants": (["ArrayType"], ""),
    "minpy.context": (["Context", "cpu", "gpu", "current_context", "set_context"], ""),
    "minpy.primitive": (["customop"], ""),
    "minpy.utils": (["gradient_checker", "minprof"], ""),
    "minpy.utils.gradient_checker": (["quick_grad_check"], ""),
    "minpy.utils.minprof": (["Profiler", "minprof"], "assert isinstance(minprof, Profiler)"),
    "minpy.compat": (["grad_and_loss", "grad", "numpy_to_minpy", "minpy_to_numpy",
                      "convert_args", "return_numpy", "wrap", "Number", "Value", "ArrayType",
                      "customop", "Context", "cpu", "gpu", "current_context", "set_context",
                      "set_global_policy", "get_global_policy", "wrap_policy",
                      "record_op_stat", "show_op_stat", "Profiler", "minprof",
                      "quick_grad_check", "Function"], ""),
    "minpy.core": (["grad", "grad_and_loss", "Function", "function", "convert_args",
                    "return_numpy", "minpy_to_numpy", "numpy_to_minpy", "Array", "customop",
                    "value_and_grad", "tree"],
                   "assert grad is minpy.compat.grad and grad is not minpy.grad\n"
                   "assert issubclass(Function, minpy.symbol.Function)\n"
                   "assert function is minpy.symbol.function"),
    "minpy.numpy": (["set_policy", "record_op_stat", "show_op_stat", "array", "fft"],
                    "assert set_policy is minpy.set_policy and array is not minpy.array"),
    "minpy.fft": (["fft", "ifft", "rfft"], "assert m is minpy.numpy.fft"),
    "minpy.linalg": (["inv", "svd", "norm"], "assert m is minpy.numpy.linalg"),
    "minpy.random": (["rand", "normal", "seed"], "assert m is minpy.numpy.random"),
    "minpy.module": (["Module", "BaseModule", "DataBatch", "DataDesc"],
                     "assert m is minpy.mxnet.module and minpy.mod is minpy.numpy.mod"),
    "minpy.metric": (["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1",
                      "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy",
                      "NegativeLogLikelihood", "Loss", "CustomMetric", "np", "create",
                      "register", "check_label_shapes"], "assert m is minpy.mxnet.metric"),
    "minpy.callback": (["BatchEndParam", "Speedometer", "do_checkpoint", "module_checkpoint",
                        "log_train_metric", "ProgressBar", "LogValidationMetricsCallback"],
                       "assert m is minpy.mxnet.callback"),
    "minpy.initializer": (["Uniform", "Normal", "Xavier", "MSRAPrelu", "Constant", "Zero",
                           "One"], "assert m is minpy.mxnet.initializer"),
    "minpy.model": (["save_checkpoint", "load_checkpoint", "load_params"],
                    "assert m is minpy.mxnet.model and "
                    "load_checkpoint is minpy.nn.checkpoint.load_checkpoint"),
    "minpy.nd": (["load", "save", "loads", "dumps", "NDArrayFileError"],
                 "assert m is minpy.mxnet.ndarray and m.NDArray is minpy.Array"),
}


def _program(path, names, check):
    """A program whose first import is ``path``, then its names and ``*``, then ``check``."""
    return "\n".join([
        f"import {path}",
        f"import {path} as m",
        f"from {path} import {', '.join(names)}",
        "import sys",
        "import minpy",
        f"assert sys.modules[{path!r}] is m",
        f"assert all(getattr(m, n) is v for n, v in zip({names!r}, [{', '.join(names)}]))",
        f"exec('from {path} import *', {{}})",
        check,
    ])


def test_every_old_import_path_alone_in_a_fresh_interpreter():
    """Each path as the first import of its own interpreter (they run side by side)."""
    runs = {path: subprocess.Popen([sys.executable, "-c", _program(path, names, check)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for path, (names, check) in OLD_PATHS.items()}
    failed = {}
    for path, run in runs.items():
        out, _ = run.communicate(timeout=300)
        if run.returncode:
            failed[path] = out[-2000:]
    assert failed == {}


def test_module_paths_are_the_real_modules():
    for path, module in minpy.compat.MODULES.items():
        assert sys.modules[path] is module, path
        assert functools.reduce(getattr, path.split(".")[1:], minpy) is module, path
    assert minpy.array.__call__ is minpy.numpy.array and minpy.fft is minpy.numpy.fft
    assert minpy.module is minpy.mxnet.module and minpy.metric is minpy.mxnet.metric


def test_minpy_core_names_are_minpys_and_nothing_else_is_set():
    """minpy.core's MinPy names are minpy.compat.core's; core's strict autograd is
    minpy.grad; minpy.numpy's MinPy names are its own (no module patched them)."""
    for name in minpy.compat.core.__all__:
        assert getattr(minpy.core, name) is getattr(minpy.compat.core, name), name
    assert minpy.grad is minpy.core.autograd.grad is not minpy.core.grad
    assert minpy.numpy.record_op_stat is minpy.numpy.op_stat.record_op_stat
    assert minpy.numpy.set_policy is minpy.dispatch.set_policy
