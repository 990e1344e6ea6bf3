"""Write (or ``--check``) the WordNet 3.0 subset argent ships for the embedded benchmark's hard negatives.

    python scripts/wordnet_subset.py --source ../shared/data/wordnet/wordnet.zip          # rewrite it
    python scripts/wordnet_subset.py --source <a full WordNet 3.0 wordnet.zip> --check    # exit 1 if stale

``--source`` is a full WordNet 3.0 in NLTK's zip layout (``python -m nltk.downloader -d DIR wordnet`` gives
``DIR/corpora/wordnet.zip``). The caption words are every word hiershapes can write: the names in the
shipped taxonomy (argent/resources/hiershapes_taxonomy.tsv), the sizes, fills and relations of the
generator's defaults and of every config/*.yaml, and "a", "an", "and". What is kept for them, and why
the offsets survive: argent/negatives/wordnet_subset.py. Rerun after changing the taxonomy or adding a
size, fill or relation word to a config; the miner names a caption word the subset does not cover.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import zipfile
from pathlib import Path

import yaml

from argent.data.hiershapes.params import HiershapesParams
from argent.data.hiershapes.vocab import Vocabulary
from argent.negatives.wordnet_subset import SubsetBuilder, subset_members, zip_bytes, zip_members
from argent.wordnet import open_reader

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "argent" / "resources" / "wordnet-3.0-subset.zip"
GLUE_WORDS = ("a", "an", "and")  # scene.py: with_article, compose


def caption_words(configs: list[Path]) -> set[str]:
    """Every word a hiershapes caption can hold, for the shipped taxonomy and these configs' parameters."""
    words = {w for concept in Vocabulary.load().concepts for w in concept.name.lower().split()}
    params = [HiershapesParams()]
    defaults = HiershapesParams()
    for path in configs:
        raw = ((yaml.safe_load(path.read_text()) or {}).get("hiershapes") or {}).get("params") or {}
        params.append(HiershapesParams(sizes=raw.get("sizes", defaults.sizes), fills=raw.get("fills", defaults.fills),
                                       relations=raw.get("relations", defaults.relations)))
    for p in params:
        words |= {w for phrase in [*p.sizes, *p.fills, *p.relations] for w in phrase.lower().split()}
    return words | set(GLUE_WORDS)


def build(source: Path, words: set[str]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="argent-wordnet-") as folder:
        builder = SubsetBuilder(open_reader(source, folder))
        for word in sorted(words):
            builder.add_word(word)
        with zipfile.ZipFile(source) as zf:
            return zip_bytes(subset_members(zf, builder, words))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="a full WordNet 3.0 wordnet.zip (NLTK layout)")
    parser.add_argument("--out", type=Path, default=SHIPPED)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out differs")
    args = parser.parse_args(argv)
    data = build(args.source, caption_words(sorted((ROOT / "config").glob("*.yaml"))))
    if args.check:
        same = args.out.is_file() and zip_members(args.out.read_bytes()) == zip_members(data)
        print(f"{args.out}: {'up to date' if same else 'DIFFERS; rerun scripts/wordnet_subset.py'}")
        return 0 if same else 1
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data):,} bytes, {len(zip_members(data))} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
