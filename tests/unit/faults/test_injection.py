"""Shell injection through the workflow config: every free-text value that reaches a shell command or
a path is refused by the schema (Snakemake validates at parse time), and every placeholder of every
rule's shell command is quoted (:q)."""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from tests.fixtures import ROOT

snakemake_utils = pytest.importorskip("snakemake.utils")
WorkflowError = pytest.importorskip("snakemake_interface_common.exceptions").WorkflowError

PAYLOADS = ["$(touch {marker})", "; touch {marker}", "`touch {marker}`", "| touch {marker}", "& touch {marker} &"]
FREE_TEXT = [  # every config string that reaches a shell command or becomes a path
    ("results",), ("variants_file",), ("hiershapes", "out"), ("data", "train_shards"), ("data", "negatives"),
    ("clean", "scorer"), ("clean", "datasets", "hierarcaps", "csv"),
    ("clean", "datasets", "hierarcaps", "images"), ("negatives", "wordnet_zip"), ("probe", "data"),
    ("tune", "study"), ("tune", "base_variant"), ("groups", "main", "variants", 0), ("groups", "ablations", "from"), ("runs", "sizes", 0),
    ("groups", "main", "sizes", 0), ("probe", "variants", 0), ("cost", "step_times"),
    ("evaluate", "benchmarks", 0),
]


def with_value(cfg, path, value):
    cfg = copy.deepcopy(cfg)
    node = cfg
    for key, after in zip(path[:-1], path[1:]):
        missing = [None] * (after + 1) if isinstance(after, int) else {}  # a list where an index follows
        node = node.setdefault(key, missing) if isinstance(key, str) else node[key]
    node[path[-1]] = value
    return cfg


@pytest.mark.parametrize("path", FREE_TEXT, ids=lambda p: ".".join(map(str, p)))
def test_schema_refuses_shell_metacharacters(path, tmp_path):
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    base.setdefault("clean", {}).setdefault("datasets", {}).setdefault("hierarcaps", {"csv": "a.csv", "images": "i"})
    snakemake_utils.validate(copy.deepcopy(base), str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    for payload in PAYLOADS:
        bad = with_value(base, path, payload.format(marker=tmp_path / "PWNED"))
        with pytest.raises(WorkflowError):
            snakemake_utils.validate(bad, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    assert not (tmp_path / "PWNED").exists()


def test_every_shell_placeholder_is_quoted():
    unquoted = []
    for rules in sorted((ROOT / "workflow" / "rules").glob("*.smk")) + [ROOT / "workflow" / "Snakefile"]:
        text = rules.read_text()
        for block in re.findall(r"^\s*shell:\s*\n((?:\s+\".*\"\s*\n)+)", text, flags=re.M):
            for field in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", block):
                if not field.endswith(":q"):
                    unquoted.append(f"{rules.name}: {{{field}}}")
    assert not unquoted, unquoted
