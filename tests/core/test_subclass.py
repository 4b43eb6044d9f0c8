"""Subclassing ``np.ndarray`` as NumPy documents it, with ``import minpy as np``.

Each recipe of NumPy's "Subclassing ndarray" page is written once against a
namespace ``xp`` and run with ``xp=numpy`` and ``xp=minpy``: the results (types,
values, attributes, the calls NumPy makes to the subclass's hooks) must be equal.
"""
import pickle

import numpy
import pytest

import minpy
from minpy.core.subclass import HostArray, check_view_type

from _standin import standin_gpu  # noqa: F401  (fixture)



# Mixing a subclass instance (host data) with arrays in one call: answered on the host.
# With a GPU and policy prefer_gpu the call goes to the device, where CuPy refuses the
# host operand (a TypeError; routing such calls to the host is execute.py's to decide).
HOST_CALLS = pytest.mark.cpu_only


class Picklable(minpy.ndarray):
    """A module-level subclass (pickle finds classes by name, as with NumPy)."""

    def __new__(cls, data):
        return minpy.asarray(data).view(cls)


def recipes(xp):
    """The page's classes, defined on ``xp.ndarray``."""
    class InfoArray(xp.ndarray):
        def __new__(subtype, shape, dtype=float, buffer=None, offset=0, strides=None,
                    order=None, info=None):
            obj = super().__new__(subtype, shape, dtype, buffer, offset, strides, order)
            obj.info = info
            return obj

        def __array_finalize__(self, obj):
            if obj is None:
                return
            self.info = getattr(obj, "info", None)

    class RealisticInfoArray(xp.ndarray):
        def __new__(cls, input_array, info=None):
            obj = xp.asarray(input_array).view(cls)
            obj.info = info
            return obj

        def __array_finalize__(self, obj):
            if obj is None:
                return
            self.info = getattr(obj, "info", None)

    log = []

    class MySubClass(xp.ndarray):
        def __new__(cls, input_array, info=None):
            obj = xp.asarray(input_array).view(cls)
            obj.info = info
            return obj

        def __array_finalize__(self, obj):
            log.append(("finalize", type(self).__name__, type(obj).__name__))
            self.info = getattr(obj, "info", None)

        def __array_wrap__(self, out_arr, context=None, return_scalar=False):
            log.append(("wrap", type(self).__name__, type(out_arr).__name__))
            return super().__array_wrap__(out_arr, context, return_scalar)

    class A(xp.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
            args, in_no = [], []
            for i, input_ in enumerate(inputs):
                if isinstance(input_, A):
                    in_no.append(i)
                    args.append(input_.view(xp.ndarray))
                else:
                    args.append(input_)
            outputs, out_no = out, []
            if outputs:
                out_args = []
                for j, output in enumerate(outputs):
                    if isinstance(output, A):
                        out_no.append(j)
                        out_args.append(output.view(xp.ndarray))
                    else:
                        out_args.append(output)
                kwargs["out"] = tuple(out_args)
            else:
                outputs = (None,) * ufunc.nout
            info = {}
            if in_no:
                info["inputs"] = in_no
            if out_no:
                info["outputs"] = out_no
            results = super().__array_ufunc__(ufunc, method, *args, **kwargs)
            if results is NotImplemented:
                return NotImplemented
            if method == "at":
                if isinstance(inputs[0], A):
                    inputs[0].info = info
                return None
            if ufunc.nout == 1:
                results = (results,)
            results = tuple((xp.asarray(result).view(A) if output is None else output)
                            for result, output in zip(results, outputs))
            if results and isinstance(results[0], A):
                results[0].info = info
            return results[0] if len(results) == 1 else results

    class NamedArray(xp.ndarray):
        """What a user writes: column names on a 2-D table."""

        def __new__(cls, data, names):
            obj = xp.asarray(data, dtype=float).view(cls)
            obj.names = tuple(names)
            return obj

        def __array_finalize__(self, obj):
            self.names = getattr(obj, "names", None)

        def column(self, name):
            return self[:, self.names.index(name)]

        def normalized(self):
            return (self - self.mean(axis=0)) / self.std(axis=0)

    return InfoArray, RealisticInfoArray, MySubClass, log, A, NamedArray


def summary(x, xp):
    """What to compare between the NumPy and the minpy run: type, values, info. The base
    type is ``xp.ndarray`` (numpy.ndarray for NumPy, minpy.Array for minpy); a
    NumPy scalar is NumPy's in both."""
    if isinstance(x, (tuple, list)):
        return [summary(e, xp) for e in x]
    name = "<base>" if type(x) is xp.ndarray else type(x).__name__
    host = numpy.asarray(x.asnumpy() if type(x) is minpy.Array else x)
    info = getattr(x, "info", getattr(x, "names", "-"))
    return name, host.dtype.str, host.tolist(), info


def both(scenario):
    got = summary(scenario(minpy), minpy)
    want = summary(scenario(numpy), numpy)
    assert got == want


def test_info_array_through_ndarray_new():
    def scenario(xp):
        InfoArray = recipes(xp)[0]
        obj = InfoArray(shape=(3,))
        obj[:] = [1, 2, 3]
        tagged = InfoArray(shape=(3,), info="information")
        tagged[:] = 7
        v = tagged[1:]
        cast = xp.arange(10).view(InfoArray)
        buf = InfoArray(shape=(2,), dtype=numpy.int64, buffer=numpy.arange(4, dtype=numpy.int64),
                        offset=8, info="buf")
        return [obj, tagged, v, cast, cast[::3], buf]
    both(scenario)


def test_ndarray_new_called_by_name():
    """Older code calls ``np.ndarray.__new__(subtype, ...)`` rather than ``super()``."""
    def scenario(xp):
        class Old(xp.ndarray):
            def __new__(subtype, shape, dtype=float, buffer=None, offset=0, info=None):
                obj = xp.ndarray.__new__(subtype, shape, dtype, buffer, offset)
                obj.info = info
                return obj

            def __array_finalize__(self, obj):
                self.info = getattr(obj, "info", None)
        o = Old((2, 2), info="old")
        o[...] = 1.5
        b = Old((2,), numpy.int64, buffer=numpy.arange(4, dtype=numpy.int64), offset=8)
        return [o, o[0], b]
    both(scenario)
    with pytest.raises(TypeError, match="minpy.array"):
        minpy.ndarray()
    assert minpy.ndarray([1, 2], "float32").dtype == numpy.float32


def test_realistic_info_array_view_of_asarray():
    def scenario(xp):
        R = recipes(xp)[1]
        obj = R(xp.arange(5), info="information")
        from_list = R([[1.0, 2.0], [3.0, 4.0]], info="list")
        return [obj, obj[1:], obj[obj > 2], from_list.T, from_list[0], obj.reshape(5, 1),
                obj.copy(), xp.exp(obj), obj + 1, 2 * obj, obj.sum(keepdims=True)]
    both(scenario)
    R = recipes(minpy)[1]
    obj = R(minpy.arange(5.0), info="i")
    assert type(minpy.exp(obj)) is R and minpy.exp(obj).info == "i"


def test_view_shares_the_buffer_of_a_host_array():
    R = recipes(minpy)[1]
    x = minpy.arange(4.0)
    v = x.view(R)
    v[0] = 10.0
    assert x[0] == 10.0 and type(v) is R and v.info is None
    x[1] = 20.0
    assert v[1] == 20.0


@HOST_CALLS
def test_array_wrap_hooks_called_as_numpy_calls_them():
    def scenario(xp):
        _, _, MySubClass, log, _, _ = recipes(xp)
        obj = MySubClass(xp.arange(5), info="spam")
        arr2 = xp.arange(5) + 1
        ret = xp.add(arr2, obj)
        v = obj[1:]
        return [ret, v], log
    got, got_log = scenario(minpy)
    want, want_log = scenario(numpy)
    assert summary(got, minpy) == summary(want, numpy)
    assert got_log == want_log
    assert ("wrap", "MySubClass", "ndarray") in got_log


@HOST_CALLS
def test_array_ufunc_recipe():
    def scenario(xp):
        A = recipes(xp)[4]
        a = xp.arange(5.0).view(A)
        b = xp.sin(a)
        c = xp.sin(xp.arange(5.0), out=(a,))
        d = xp.arange(5.0).view(A) + xp.ones(1).view(A)
        e = xp.arange(5.0).view(A)
        e += xp.ones(1).view(A)
        return [b, c, d, e]
    both(scenario)


def test_named_array_as_a_user_writes_it():
    def scenario(xp):
        NamedArray = recipes(xp)[5]
        t = NamedArray([[1, 10], [2, 20], [3, 60]], names=["a", "b"])
        col = t.column("b")
        n = t.normalized()
        means = t.mean(axis=0)
        total = xp.sum(t * 2, axis=1)
        stacked = xp.concatenate([t, t])
        return [t, col, n, means, total, stacked, t[:2], xp.where(t > 5, t, 0)]
    both(scenario)
    NamedArray = recipes(minpy)[5]
    t = NamedArray([[1, 2], [3, 4]], names=["x", "y"])
    # minpy's own functions take it as host data, as NumPy's
    assert float(minpy.linalg.det(t)) == pytest.approx(-2.0)
    s = minpy.sum(t)
    assert s == 10.0
    # minpy.asarray gives minpy's own array (as numpy.asarray gives the base class)
    plain = minpy.asarray(t)
    assert type(plain) is minpy.Array and plain.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert type(minpy.asanyarray(t)) is NamedArray
    # NumPy's pickle of a subclass (attributes are the user's to pickle, as with NumPy)
    p = Picklable([1.0, 2.0])
    back = pickle.loads(pickle.dumps(p))
    assert type(back) is Picklable and back.tolist() == [1.0, 2.0]


def test_isinstance_and_issubclass():
    NamedArray = recipes(minpy)[5]

    class Deeper(NamedArray):
        pass

    t = NamedArray([[1.0]], names=["a"])
    assert isinstance(t, minpy.ndarray) and isinstance(t, numpy.ndarray)
    assert issubclass(NamedArray, minpy.ndarray) and issubclass(Deeper, minpy.ndarray)
    assert isinstance(Deeper([[1.0]], names=["a"]), minpy.ndarray)
    assert issubclass(NamedArray, HostArray) and issubclass(NamedArray, numpy.ndarray)
    assert isinstance(minpy.arange(3), minpy.ndarray)
    # nothing else changes: NumPy's plain arrays and numbers are no minpy arrays
    assert not isinstance(numpy.ones(2), minpy.ndarray)
    assert not isinstance(1.0, minpy.ndarray)
    assert not issubclass(numpy.ndarray, minpy.ndarray) and not issubclass(float, minpy.Array)
    assert not isinstance(t, minpy.core.array.RealScalar)


def test_subclass_with_a_mixin():
    class Tagged:
        def tag(self):
            return "t"

    class T(minpy.ndarray, Tagged):
        pass

    x = minpy.arange(3.0).view(T)
    assert type(x) is T and x.tag() == "t" and isinstance(x, Tagged)
    assert isinstance(x, minpy.ndarray)


def test_view_as_minpy_ndarray_is_numpys_view_as_ndarray():
    x = minpy.arange(3.0)
    v = x.view(minpy.ndarray)
    assert type(v) is minpy.Array and v.tolist() == [0.0, 1.0, 2.0]
    v[0] = 5.0
    assert x[0] == 5.0
    assert x.view(minpy.int64 if hasattr(minpy, "int64") else numpy.int64, minpy.ndarray
                  ).tolist() == x.asnumpy().view(numpy.int64).tolist()
    R = recipes(minpy)[1]
    r = R([1.0, 2.0])
    assert type(r.view(minpy.ndarray)) is numpy.ndarray
    assert type(r.view(type=minpy.ndarray)) is numpy.ndarray


@HOST_CALLS
def test_grad_treats_an_instance_as_a_constant_or_refuses_by_name():
    NamedArray = recipes(minpy)[5]
    t = NamedArray([[1.0, 2.0]], names=["a", "b"])
    x = minpy.array([[3.0, 4.0]])
    # a traced call whose NumPy result would be the subclass: refused, naming the function
    with pytest.raises(TypeError, match="multiply returned a NamedArray"):
        minpy.grad(lambda x: minpy.sum(x * t))(x)
    # as host data through minpy.asarray: a constant, the gradient is right
    g = minpy.grad(lambda x: minpy.sum(x * minpy.asarray(t)))(x)
    assert g.tolist() == [[1.0, 2.0]]
    # differentiating with respect to an instance: refused by name, never silent
    with pytest.raises(TypeError, match="minpy.grad.*NamedArray"):
        minpy.grad(lambda y: minpy.sum(y * 2.0))(t)
    # a view as the subclass of an array being differentiated: refused by name
    with pytest.raises(TypeError, match="view returned a NamedArray"):
        minpy.grad(lambda x: minpy.sum(x.view(NamedArray)))(x)


def test_a_device_array_viewed_as_a_subclass_is_refused(standin_gpu):
    R = recipes(minpy)[1]
    with minpy.gpu(0):
        x = minpy.arange(3.0)
    assert x.context == minpy.gpu(0)
    with pytest.raises(TypeError, match=r"view\(RealisticInfoArray\).*device.*asnumpy"):
        x.view(R)
    # minpy.ndarray itself is the device array's own type: a plain view
    assert x.view(minpy.ndarray).context == minpy.gpu(0)
    r = x.asnumpy().view(R)
    assert type(r) is R and r.tolist() == [0.0, 1.0, 2.0]


def test_check_view_type_unit():
    R = recipes(minpy)[1]
    check_view_type(True, (R,), {})
    check_view_type(False, (numpy.float32,), {"type": numpy.ndarray})
    with pytest.raises(TypeError, match="view\\(RealisticInfoArray\\)"):
        check_view_type(False, (), {"type": R})


def test_minpy_code_finding_an_instance_by_isinstance_reads_it_as_host_data():
    R = recipes(minpy)[1]
    r = R([1.0, 2.0], info="i")
    assert type(r.asnumpy()) is numpy.ndarray and r.context == minpy.cpu(0)
    assert r.wait_to_read() is r and r._node is None
    minpy.testing.assert_allclose(r, [1.0, 2.0])
