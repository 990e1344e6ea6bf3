"""argent's one error boundary: a Ctrl-C is one line and the shell's status; a stop is no failure to debug."""

import types

import pytest

from argent import cli
from argent.engine.preemption import Interrupted
from argent.io import REFUSALS


def verb_raising(monkeypatch, err: BaseException) -> None:
    def main(argv):
        raise err
    monkeypatch.setattr(cli.importlib, "import_module", lambda name: types.SimpleNamespace(main=main))


def test_a_ctrl_c_in_any_verb_is_one_line_and_exit_130(monkeypatch, capsys):
    verb_raising(monkeypatch, KeyboardInterrupt())
    assert cli.main(["evaluate", "--run", "x"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Ctrl-C" in err and "Traceback" not in err


def test_a_stopped_training_prints_its_line_without_the_debug_hint(monkeypatch, capsys):
    verb_raising(monkeypatch, Interrupted("stopped at step 7; resume with --resume"))
    assert cli.main(["train"]) == 130
    err = capsys.readouterr().err
    assert "step 7" in err and "--debug" not in err


def test_an_os_refusal_raised_outside_argent_io_reads_the_same_table(monkeypatch, capsys):
    import errno

    verb_raising(monkeypatch, OSError(errno.EFBIG, "File too large", "/x/metrics.jsonl"))
    assert cli.main(["train"]) == 2
    assert f"/x/metrics.jsonl: {REFUSALS[errno.EFBIG]}" in capsys.readouterr().err


def test_debug_shows_the_traceback_of_a_ctrl_c(monkeypatch):
    verb_raising(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        cli.main(["check", "--debug"])
