"""`argent <verb> ...`: one entry point; each verb lives in its own module with ``main(argv)``."""

from __future__ import annotations

import errno
import importlib
import json
import os
import sys
import traceback
from pathlib import Path

from argent.io import REFUSALS, ArgentError

VERBS: dict[str, tuple[str, str]] = {
    "plan": ("argent.plan.cli", "per experiment group: runs, steps, GPUs and estimated hours, before launch"),
    "check": ("argent.check.cli", "preflight: validate the config, data paths, a few records, device, disk"),
    "synth": ("argent.data.hiershapes.cli", "generate the embedded hiershapes benchmark"),
    "taxonomy": ("argent.data.hiershapes.wordnet_subtree", "regenerate the shipped hiershapes taxonomy from WordNet"),
    "train": ("argent.engine.cli", "train one (variant, size, seed) run"),
    "evaluate": ("argent.evaluation.cli", "evaluate a run on one benchmark"),
    "clean": ("argent.cleaning.cli", "clean HierarCaps and build the PEP negative pool"),
    "mine": ("argent.negatives.cli", "mine concreteness-aware hard negatives"),
    "tune": ("argent.tuning.cli", "run an Optuna study over loss weights (validation data only)"),
    "probe": ("argent.probe.cli", "taxonomic-generalisation probe"),
    "tables": ("argent.tables.cli", "aggregate evaluation JSON into tables and figures"),
    "track": ("argent.tracking.cli", "re-send a finished run's metrics.jsonl to MLflow"),
    "restamp": ("argent.restamp.cli", "re-stamp run folders of an older run identity after checking their config"),
}

EXPECTED_EXIT = 2  # an expected failure (bad input, damaged file, missing device, full disk): a message, no traceback
INTERRUPTED_EXIT = 130  # 128 + SIGINT: stopped by the user (argent.engine.preemption uses the same)


def _usage() -> str:
    lines = ["usage: argent <verb> [options]", "", "verbs:"]
    lines += [f"  {verb:<10} {help_}" for verb, (_, help_) in VERBS.items()]
    lines += ["", "argent <verb> --help for a verb's options; --debug (anywhere) shows tracebacks; "
                  "argent --version the installed version."]
    return "\n".join(lines)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("argent")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        installed = "unknown (not installed: pip install -e .)"
    return f"{installed} ({_commit()})"


def _commit() -> str:
    """The commit of the checkout this package runs from (an editable install or a source tree), with
    "uncommitted changes" when its tracked files differ; none for an installed copy outside a checkout."""
    import subprocess

    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:  # e.g. site-packages inside a repo's .venv
            raise ValueError
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, ValueError, subprocess.SubprocessError):
        return "commit unknown: not run from a git checkout"
    return f"commit {commit}{', uncommitted changes' if dirty else ''}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"argent {_version()}")
        return 0
    verb, rest = argv[0], argv[1:]
    if verb not in VERBS:
        print(f"argent: unknown verb {verb!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    debug = "--debug" in rest or os.environ.get("ARGENT_DEBUG") == "1"
    rest = [a for a in rest if a != "--debug"]
    try:
        module = importlib.import_module(VERBS[verb][0])
        return int(module.main(rest) or 0)
    except KeyboardInterrupt:
        if debug:
            raise
        # A verb that does not checkpoint on Ctrl-C (train and tune do: argent.engine.preemption) writes
        # atomically, so stopping it leaves every finished file whole: one line, the shell's status.
        print(f"argent {verb}: stopped by Ctrl-C (SIGINT); finished outputs are whole, re-run to finish",
              file=sys.stderr)
        return INTERRUPTED_EXIT
    except Exception as err:  # noqa: BLE001 - the one error boundary of every verb
        message = explain(err)
        if message is None or debug:
            raise
        print(f"argent {verb}: {message}", file=sys.stderr)
        code = int(getattr(err, "exit_code", EXPECTED_EXIT))  # e.g. a preempted run's own status
        if code == EXPECTED_EXIT:  # a stop (75, 130) is no failure to debug
            print(f"argent {verb}: (add --debug for the traceback)", file=sys.stderr)
        return code


def explain(err: BaseException) -> str | None:
    """The one-paragraph message for an expected failure, or None for a bug (shown as a traceback)."""
    if isinstance(err, ArgentError):
        return str(err)
    if isinstance(err, json.JSONDecodeError):
        return f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}; " \
               f"delete the damaged file and re-run the job that writes it ({_origin(err)})"
    if isinstance(err, FileNotFoundError) and err.errno is None:
        return str(err)  # argent's own "not found" messages name the path and the fix
    if isinstance(err, OSError) and err.errno is not None:
        where = err.filename or "?"
        if err.errno in REFUSALS:  # the file system's refusals: one table (argent.io), whoever wrote
            return f"{where}: {REFUSALS[err.errno]}"
        if err.errno == errno.ENOENT:
            return f"{where}: no such file or folder; check the path (and the config key that names it)"
        if err.errno in (errno.EISDIR, errno.ENOTDIR):
            return f"{where}: {err.strerror}; check the path"
    return None


def _origin(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    return f"raised in {frames[-1].filename}:{frames[-1].lineno}" if frames else "see --debug"


if __name__ == "__main__":
    raise SystemExit(main())
