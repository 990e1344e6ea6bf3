"""`argent <verb> ...`: one entry point; each verb lives in its own module with ``main(argv)``."""

from __future__ import annotations

import importlib
import os
import sys

VERBS: dict[str, tuple[str, str]] = {
    "synth": ("argent.data.hiershapes.cli", "generate the embedded hiershapes benchmark"),
    "taxonomy": ("argent.data.hiershapes.wordnet_subtree", "regenerate the shipped hiershapes taxonomy from WordNet"),
    "train": ("argent.engine.cli", "train one (variant, size, seed) run"),
    "evaluate": ("argent.evaluation.cli", "evaluate a run on one benchmark"),
    "clean": ("argent.cleaning.cli", "clean HierarCaps and build the PEP negative pool"),
    "mine": ("argent.negatives.cli", "mine concreteness-aware hard negatives"),
    "tune": ("argent.tuning.cli", "run an Optuna study over loss weights (validation data only)"),
    "probe": ("argent.probe.cli", "taxonomic-generalisation probe"),
    "tables": ("argent.tables", "aggregate evaluation JSON into tables and figures"),
    "track": ("argent.engine.tracking", "re-send a finished run's metrics.jsonl to MLflow"),
}


def _usage() -> str:
    lines = ["usage: argent <verb> [options]", "", "verbs:"]
    lines += [f"  {verb:<10} {help_}" for verb, (_, help_) in VERBS.items()]
    lines += ["", "argent <verb> --help for a verb's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    verb, rest = argv[0], argv[1:]
    if verb not in VERBS:
        print(f"argent: unknown verb {verb!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(VERBS[verb][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
