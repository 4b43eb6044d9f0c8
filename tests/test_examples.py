"""The examples run as written and learn (the README's flagship command included)."""
import importlib.util
import os

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


@pytest.fixture
def load(monkeypatch):
    """Import an example by file name, with examples/ on sys.path as when run as a script."""
    monkeypatch.syspath_prepend(EXAMPLES)

    def _load(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    return _load


def test_mlp_digits_learns(load, capsys):
    acc = load("mlp_digits").main(["--epochs", "8"])
    assert acc > 0.93, capsys.readouterr().out


def test_cnn_digits_with_solver_reaches_97_percent(load, capsys, tmp_path):
    acc = load("cnn_digits").main(["--plot", str(tmp_path / "cnn.png")])
    assert acc >= 0.97, capsys.readouterr().out
    assert (tmp_path / "cnn.png").stat().st_size > 5000


def test_cnn_digits_symbol_model_learns(load, capsys):
    acc = load("cnn_digits").main(["--symbol", "--epochs", "3"])
    assert acc > 0.9, capsys.readouterr().out


def test_lstm_chars_learns(load, capsys):
    acc = load("lstm_chars").main(["--epochs", "2"])
    assert acc > 0.3, capsys.readouterr().out      # a unigram guess gets ~0.15


def test_quickstart_runs(load, capsys):
    load("quickstart")
    assert "tanh*2+1" in capsys.readouterr().out
