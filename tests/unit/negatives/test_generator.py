"""Generator knobs (unrated policy, c-delta filter, temperature, top-k) and the tagger's chunks."""

from __future__ import annotations

import pytest

from argent.config import ConfigError
from argent.negatives.config import MiningConfig, mining_config
from argent.negatives.generator import NegativeGenerator, caption_rng
from argent.negatives.norms import ConcretenessNorms
from argent.negatives.tagger import LexiconTagger

CAPTIONS = [
    "a small striped red square left of a large solid blue circle",
    "a large outlined green triangle above a small solid yellow hexagon",
    "a black dog sitting on a wooden bench next to a red car",
    "Two white goats in a snowy field look at a tree.",
]


def test_tagger_chunks_hiershapes_caption(wordnet):
    parse = LexiconTagger(wordnet).parse("A small striped red square left of an outlined blue circle.")
    tags = [(t.text, t.tag) for t in parse.tokens]
    assert tags == [("A", "DET"), ("small", "ADJ"), ("striped", "ADJ"), ("red", "ADJ"), ("square", "NOUN"),
                    ("left", "REL"), ("of", "REL"), ("an", "DET"), ("outlined", "ADJ"), ("blue", "ADJ"),
                    ("circle", "NOUN"), (".", "PUNCT")]
    assert [(c.start, c.end, c.head) for c in parse.chunks] == [(0, 5, 4), (7, 11, 10)]
    assert [t.chunk for t in parse.tokens] == [0, 0, 0, 0, 0, -1, -1, 1, 1, 1, 1, -1]


def test_tagger_verbs_and_lemmas(wordnet):
    parse = LexiconTagger(wordnet).parse("A man holding an oven door while birds are sitting on branches")
    tag = {t.text: t.tag for t in parse.tokens}
    assert tag["holding"] == tag["sitting"] == "VERB"
    assert tag["man"] == tag["oven"] == tag["door"] == tag["birds"] == tag["branches"] == "NOUN"
    lemma = {t.text: t.lemma for t in parse.tokens}
    assert lemma["birds"] == "bird" and lemma["branches"] == "branch"


def test_unrated_words_skip_or_default(wordnet):
    # "circle" gets no rating in these norms: skipped, or ranked at the default and recorded as null c.
    norms = ConcretenessNorms({"small": 3.2, "striped": 4.0, "red": 4.2, "square": 4.3, "large": 3.4,
                               "solid": 4.4, "blue": 3.8})
    caption = CAPTIONS[0]
    skip = NegativeGenerator(MiningConfig(top_k=1), wordnet=wordnet, norms=norms)
    for mode in ("concrete", "abstract", "random"):
        row = skip.generate("k", caption, mode).row
        assert row is not None and row["old_word"] != "circle"
    default = NegativeGenerator(MiningConfig(top_k=1, unrated="default", unrated_value=5.0), wordnet=wordnet, norms=norms)
    row = default.generate("k", caption, "concrete").row
    assert row["old_word"] == "circle" and row["c_old"] is None and row["c_hat"] == 1.0


def test_c_delta_filter(wordnet, norms):
    delta = 0.25
    generator = NegativeGenerator(MiningConfig(max_c_delta=delta, operators=["replace_noun", "replace_att"]),
                                  wordnet=wordnet, norms=norms)
    rows = [(str(i), c) for i, c in enumerate(CAPTIONS)]
    table, summary = generator.mine(rows)
    assert table.height > 0
    for row in table.iter_rows(named=True):
        if row["c_new"] is not None:
            assert abs(row["c_new"] - row["c_old"]) <= delta + 1e-12, row
    assert sum(s["rejected"].get("c_delta", 0) for s in summary["modes"].values()) > 0


def test_temperature_and_top_k(wordnet, norms):
    greedy = NegativeGenerator(MiningConfig(), wordnet=wordnet, norms=norms)
    cold = NegativeGenerator(MiningConfig(temperature=1e-4), wordnet=wordnet, norms=norms)
    hot = NegativeGenerator(MiningConfig(temperature=100.0), wordnet=wordnet, norms=norms)
    slots_hot = []
    for i, caption in enumerate(CAPTIONS):
        parse = greedy.parse(caption)
        slots = greedy.slots(parse)
        values = sorted({s.value for s in slots})
        if len(values) < len(slots):
            continue  # ties: the greedy order breaks them by position, the sampled one at random
        order = [s.index for s in greedy.rank(slots, "concrete", caption_rng(0, "concrete", str(i)))]
        # T -> 0: sampling ∝ exp(ĉ/T) is the greedy order.
        assert [s.index for s in cold.rank(slots, "concrete", caption_rng(0, "concrete", str(i)))] == order
        slots_hot += [tuple(s.index for s in hot.rank(slots, "concrete", caption_rng(seed, "concrete", str(i))))
                      for seed in range(20)]
    assert len(set(slots_hot)) > 3  # T large: near-uniform orders, many distinct ones
    top1 = NegativeGenerator(MiningConfig(top_k=1), wordnet=wordnet, norms=norms)
    parse = top1.parse(CAPTIONS[2])
    best = top1.candidates(top1.rank(top1.slots(parse), "concrete", caption_rng(0, "concrete", "k")), "concrete")
    assert len(best) == 1


def test_config_is_strict():
    assert mining_config({"top_k": 2}).top_k == 2
    for bad in ({"modes": ["sideways"]}, {"operators": []}, {"concrete_threshold": 7.0}, {"topk": 1},
                {"top_k": "one"}, {"modes": ["random", "random"]}):
        with pytest.raises(ConfigError):
            mining_config(bad)
