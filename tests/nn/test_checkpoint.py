"""Checkpoint files: atomic writes, verified reads, clear errors, safe unpickling."""
import hashlib
import os
import pickle
import struct

import numpy
import pytest

from minpy.nn import checkpoint
from minpy.nn.checkpoint import CheckpointError


def _state():
    return {"params": {"w": numpy.arange(12.0).reshape(3, 4), "b": numpy.ones(3, numpy.float32)},
            "epoch": 3, "rng": numpy.random.default_rng(1).bit_generator.state,
            "legacy": numpy.random.RandomState(0).get_state(), "hist": [1.5, 2.0]}


def test_round_trip_is_exact(tmp_path):
    path = tmp_path / "a.minpy"
    checkpoint.save(path, _state())
    back = checkpoint.load(path)
    numpy.testing.assert_array_equal(back["params"]["w"], _state()["params"]["w"])
    assert back["params"]["b"].dtype == numpy.float32
    assert back["rng"] == _state()["rng"] and back["epoch"] == 3
    numpy.testing.assert_array_equal(back["legacy"][1], _state()["legacy"][1])
    assert [p.name for p in tmp_path.iterdir()] == ["a.minpy"]     # no temporary left behind


@pytest.mark.parametrize("keep", [0, 5, 40, -1])
def test_truncated_file_is_refused(tmp_path, keep):
    path = tmp_path / "a.minpy"
    checkpoint.save(path, _state())
    blob = path.read_bytes()
    path.write_bytes(blob[:keep] if keep >= 0 else blob[:-3])
    with pytest.raises(CheckpointError, match="truncated"):
        checkpoint.load(path)


def test_corrupt_byte_is_detected(tmp_path):
    path = tmp_path / "a.minpy"
    checkpoint.save(path, _state())
    blob = bytearray(path.read_bytes())
    blob[-10] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(CheckpointError, match="corrupt"):
        checkpoint.load(path)


def test_foreign_file_is_refused(tmp_path):
    path = tmp_path / "a.npz"
    numpy.savez(path, x=numpy.zeros(3))
    with pytest.raises(CheckpointError, match="not a minpy checkpoint"):
        checkpoint.load(path)


def test_failed_write_keeps_the_last_good_file(tmp_path):
    path = tmp_path / "a.minpy"
    checkpoint.save(path, _state())
    good = path.read_bytes()

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("disk full halfway")
    with pytest.raises(RuntimeError, match="disk full"):
        checkpoint.save(path, {"x": numpy.zeros(3), "bad": Unpicklable()})
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["a.minpy"]


def test_code_in_a_checkpoint_is_not_run(tmp_path):
    path = tmp_path / "evil.minpy"
    payload = pickle.dumps({"x": os.system})     # a global that is not plain data
    path.write_bytes(struct.pack("<8sQ32s", checkpoint.MAGIC, len(payload),
                                 hashlib.sha256(payload).digest()) + payload)
    with pytest.raises(CheckpointError, match="refusing"):
        checkpoint.load(path)
