"""``argent clean``: parse the command line, then ``run(job)`` (argent.cleaning.run).

The data set's files are flags (the workflow rule names them); every option of the cleaning itself
comes from the ``clean:`` section of ``--config`` (defaults when absent) and ``--set clean.<key>=<value>``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from argent.cleaning.config import CleanSection, load_clean_section
from argent.cleaning.scorer_base import SCORER_SPECS, ScorerUnavailable
from argent.config import ConfigError
from argent.data.policy import BadDataError


def build_parser() -> argparse.ArgumentParser:
    defaults = {f.name: f.default for f in dataclasses.fields(CleanSection) if f.name != "datasets"}
    defaults["table1_ks"] = CleanSection().table1_ks
    p = argparse.ArgumentParser(
        prog="argent clean",
        description="Clean HierarCaps (keep unambiguous samples), build the PEP negative pool and run the "
                    "Table 1 false-negative analysis. Writes hierarcaps_clean.csv, clean_scores.csv, "
                    "caption_degrees.csv, negative_pool.csv, table1.csv/.md and summary.json into --out-dir.",
        epilog=f"clean: keys and defaults: {', '.join(f'{k}={v!r}' for k, v in defaults.items())}. "
               f"Scorer specs: {SCORER_SPECS}.",
    )
    p.add_argument("--config", type=Path, help="workflow config (e.g. config/config.yaml); its clean: section is read")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a clean: key, e.g. --set clean.keep=all --set clean.scorer=text (repeatable)")
    p.add_argument("--csv", required=True, type=Path, help="hierarcaps_test.csv (id, captions, image_url)")
    p.add_argument("--dataset", default=None,
                   help="the clean.datasets entry being cleaned: its own keep (if set) replaces clean.keep; "
                        "default: the entry whose csv is --csv, if any")
    p.add_argument("--images", type=Path, default=None,
                   help="folder of COCO_val2014_<id>.jpg; rows whose image is missing are bad rows "
                        "(omit only for text-only scoring: images are then not checked)")
    p.add_argument("--expanded", default="auto",
                   help="hierarcaps_test_expanded.csv.gz for the text scorer's image stand-in; 'auto' = the "
                        "file beside --csv if present, 'none' = own caption only")
    p.add_argument("--out-dir", required=True, type=Path)
    return p


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    from argent.cleaning.run import CleanJob, run  # torch and polars: after the parse, so --help is instant
    from argent.device import require_device

    try:
        section = load_clean_section(args.config, args.overrides)
        dataset = args.dataset or section.dataset_of(args.csv)
        if dataset is not None:
            section = section.for_dataset(dataset)  # a data set's own keep (e.g. the embedded split's)
        require_device(section.device)  # clean.device there, before any work (by hand: a traceback; issue 54)
        job = CleanJob(csv=args.csv, out_dir=args.out_dir, images=args.images, expanded=args.expanded, config=section)
        summary = run(job)
    except (ConfigError, BadDataError, ScorerUnavailable) as err:
        print(f"argent clean: error: {err}", file=sys.stderr)
        return 2
    c, t, p = summary["counts"], summary["thresholds"], summary["pool"]
    print(f"kept {c['kept']} of {c['samples']} samples ({c['rows']} rows; reasons {c['reasons']}); "
          f"last kept alignment {t['alignment_of_last_kept']}; pool {p['size']} captions, degree "
          f"{p['pool_degree_min']}..{p['pool_degree_max']} (all {p['all_degree_min']}..{p['all_degree_max']}); "
          f"outputs in {args.out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
