"""``argent synth``: generate the hiershapes benchmark (see ``argent.data.hiershapes.generate``).

Parameters come from the defaults, then ``--params FILE`` (a YAML mapping of ``HiershapesParams``
fields, or a workflow config whose ``hiershapes:`` section holds them; its ``out`` key is ignored),
then the explicit flags. ``--workers`` is an alias of ``--jobs``. Example:

    argent synth --out data/hiershapes --seed 0 --train-scenes 20000 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from argent.config import ConfigError, from_dict, load_yaml
from argent.data.hiershapes.generate import MARKER, HiershapesParams, generate
from argent.io import refuse_foreign
from argent.runs.identity import stable_hash

_FLAGS = {  # flag -> field, type
    "--seed": ("seed", int),
    "--train-scenes": ("train_scenes", int),
    "--val-scenes": ("val_scenes", int),
    "--test-scenes": ("test_scenes", int),
    "--per-class": ("per_class", int),
    "--val-per-class": ("val_per_class", int),
    "--shard-size": ("shard_size", int),
    "--image-size": ("image_size", int),
    "--min-objects": ("min_objects", int),
    "--max-objects": ("max_objects", int),
    "--jpeg-quality": ("jpeg_quality", int),
    "--taxonomy": ("taxonomy", str),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="argent synth", description="Generate the hiershapes benchmark.")
    parser.add_argument("--out", type=Path, required=True, help="output folder (e.g. data/hiershapes)")
    parser.add_argument("--params", type=Path, help="YAML mapping of generator parameters")
    for flag, (name, tp) in _FLAGS.items():
        parser.add_argument(flag, dest=name, type=tp, default=None)
    parser.add_argument("--classes", nargs="+", default=None, help="class synsets (in the taxonomy file)")
    parser.add_argument("--colours", nargs="+", default=None, help="colour synsets (in the taxonomy file)")
    parser.add_argument("--jobs", "--workers", dest="jobs", type=int, default=min(os.cpu_count() or 1, 8),
                        help="worker processes (the output does not depend on it)")
    parser.add_argument("--overwrite", action="store_true",
                        help=f"replace an existing output folder made by argent synth (it holds {MARKER})")
    return parser


def given_params(args: argparse.Namespace) -> dict[str, Any]:
    """The parameters given (``--params`` file, then the flags), before the defaults fill the rest."""
    given: dict[str, Any] = {}
    if args.params:
        raw = load_yaml(args.params)
        section = dict(raw["hiershapes"]) if isinstance(raw.get("hiershapes"), dict) else dict(raw)
        section.pop("out", None)  # a workflow config's output folder; --out decides
        given.update(section)
    for name in [n for n, _ in _FLAGS.values()] + ["classes", "colours"]:
        if getattr(args, name) is not None:
            given[name] = getattr(args, name)
    return given


def resolve_params(args: argparse.Namespace) -> HiershapesParams:
    return from_dict(HiershapesParams, {**asdict(HiershapesParams()), **given_params(args)}, "hiershapes")


def dataset_hash(args: argparse.Namespace) -> str:
    """The identity the workflow gives data of the parameters given (argent/config/derived_paths.py:
    ``hiershapes-<stable_hash(hiershapes.params)>``; the workflow passes exactly those in ``--params``)."""
    return f"hiershapes-{stable_hash(given_params(args))}"


def _legacy_hiershapes(out: Path) -> bool:
    """A hiershapes folder written before the marker existed: its manifest names it."""
    try:
        return json.loads((out / "manifest.json").read_text()).get("name") == "hiershapes"
    except (OSError, ValueError, AttributeError):
        return False


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    start = time.perf_counter()
    try:
        params = resolve_params(args)
        if args.overwrite and not _legacy_hiershapes(args.out):
            refuse_foreign(args.out, MARKER, "argent synth")  # never replace the user's own folder
        manifest = generate(params, args.out, jobs=args.jobs, overwrite=args.overwrite,
                            dataset_hash=dataset_hash(args))
    except (ConfigError, ValueError, FileExistsError) as err:  # VocabularyError is a ValueError
        print(f"argent synth: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - start
    counts = manifest["counts"]
    print(json.dumps({"out": str(args.out), "seconds": round(seconds, 2), "content_hash": manifest["content_hash"],
                      "train": counts["train"], "val": counts["val"], "classification": counts["classification"],
                      "test": counts["test"], "sugarcrepe": counts.get("sugarcrepe", {})}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
