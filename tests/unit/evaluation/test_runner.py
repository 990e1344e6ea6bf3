"""The evaluation glue: benchmark entries, the runner on small data sets, the CLI.

Known answers come from an 'oracle' model that implements the model contract with hand-made
encoders (bag of token ids for texts, colour → that colour word's token for images), so what
each protocol must report is known without trusting the code under test. A randomly initialised
tiny model then runs every protocol through the real readers (shape/count checks).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from argent import geometry
from argent.config import ConfigError
from argent.evaluation.benchmarks import load_benchmark, parse_benchmark
from argent.evaluation.runner import evaluate
from argent.io import atomic_write_json
from argent.models.tokenizer import tokenize
from tests.fixtures import COLOURS, VOCAB, OracleModel, colour_image, word_token, write_karpathy, write_sugarcrepe


# ------------------------------------------------------------------ benchmark entries
def test_entry_validation_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"benchmarks\.zs\.rooot: unknown key"):
        parse_benchmark("zs", {"protocol": "zeroshot", "rooot": "x"})
    with pytest.raises(ConfigError, match=r"benchmarks\.zs\.protocol: 'zero' is not allowed"):
        parse_benchmark("zs", {"protocol": "zero", "root": "x"})
    with pytest.raises(ConfigError, match=r"benchmarks\.zs\.root: required"):
        parse_benchmark("zs", {"protocol": "zeroshot"})
    with pytest.raises(ConfigError, match=r"benchmarks\.r\.ks\[0\]: expected an integer"):
        parse_benchmark("r", {"protocol": "retrieval", "annotations": "a", "image_dir": "b", "ks": ["5"]})
    with pytest.raises(ConfigError, match=r"benchmarks\.zs\.templates"):
        parse_benchmark("zs", {"protocol": "zeroshot", "root": "x", "templates": ["no slot"]})
    with pytest.raises(ConfigError, match=r"benchmarks\.p\.batch_size: must be >= 1"):
        parse_benchmark("p", {"protocol": "pep", "hierarcaps_csv": "a", "image_dir": "b", "batch_size": 0})
    # a key of another protocol is unknown here
    with pytest.raises(ConfigError, match=r"benchmarks\.p\.ks: unknown key for protocol 'pep'"):
        parse_benchmark("p", {"protocol": "pep", "hierarcaps_csv": "a", "image_dir": "b", "ks": [5]})
    entry = parse_benchmark("zs", {"protocol": "zeroshot", "root": "data/x", "taxonomy": "/abs/t.txt"}, base_dir=tmp_path)
    assert entry.root == str(tmp_path / "data/x") and entry.taxonomy == "/abs/t.txt"


def test_load_benchmark_from_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"benchmarks": {"hs_zs": {"protocol": "zeroshot", "root": "r"}}}))
    assert load_benchmark(cfg, "hs_zs").protocol == "zeroshot"
    with pytest.raises(ConfigError, match=r"benchmarks\.nope not found; known: \['hs_zs'\]"):
        load_benchmark(cfg, "nope")


def test_result_json_is_written_atomically_and_strictly(tmp_path: Path) -> None:
    out = tmp_path / "a" / "r.json"
    atomic_write_json(out, {"x": 1})
    with pytest.raises(ValueError):
        atomic_write_json(out, {"x": float("nan")})  # JSON has no NaN: refuse, keep the old file
    assert json.loads(out.read_text()) == {"x": 1}
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]


# ------------------------------------------------------------------ oracle: known answers
@pytest.fixture()
def colour_folder(tmp_path: Path) -> Path:
    root = tmp_path / "classification"
    ids = {"red": "n001", "green": "n002", "blue": "n003"}
    for colour, wnid in ids.items():
        for i in range(2):
            colour_image(root / wnid / f"{i}.jpg", colour)
    (root / "class_names.tsv").write_text("".join(f"{w}\t{c}\n" for c, w in ids.items()))
    (root / "taxonomy.txt").write_text("n000 n010\nn010 n001\nn010 n002\nn000 n003\n")
    return root


@pytest.mark.parametrize("geom", ["euclidean", "lorentz"])
def test_zeroshot_oracle(colour_folder: Path, geom: str) -> None:
    entry = parse_benchmark("zs", {"protocol": "zeroshot", "root": str(colour_folder), "taxonomy": str(colour_folder / "taxonomy.txt")})
    result = evaluate(OracleModel(geom), "zs", entry)
    m = result["metrics"]
    assert m["top1"] == 1.0 and m["mean_per_class"] == 1.0
    assert m["tie"] == 0.0 and m["lca"] == 1.0 and m["jaccard"] == 1.0
    assert result["counts"]["n_items"] == 6 and result["counts"]["n_templates"] == 3


def test_zeroshot_oracle_wrong_names_gives_known_confusion(colour_folder: Path) -> None:
    # Swap the names of red (n001) and blue (n003): their images are predicted as each other.
    (colour_folder / "class_names.tsv").write_text("n001\tblue\nn002\tgreen\nn003\tred\n")
    entry = parse_benchmark("zs", {"protocol": "zeroshot", "root": str(colour_folder), "taxonomy": str(colour_folder / "taxonomy.txt"), "templates": ["a {}."]})
    m = evaluate(OracleModel(), "zs", entry)["metrics"]
    assert m["top1"] == pytest.approx(2 / 6)
    # n001 (depth 2, under n010) <-> n003 (depth 1, under the root): path length 3.
    # truth n001 / pred n003: A(pred) = {n000}, A(true) = {n000, n010}: LCA 1, J 1/2, P 1, R 1/2.
    # truth n003 / pred n001: LCA 2 - 1 + 1 = 2, J 1/2, P 1/2, R 1.
    assert m["tie"] == pytest.approx((0 + 3 + 3) / 3)
    assert m["lca"] == pytest.approx((1 + 1 + 2) / 3)
    assert m["jaccard"] == pytest.approx((1 + 0.5 + 0.5) / 3)


def test_zeroshot_taxonomy_must_cover_classes(colour_folder: Path) -> None:
    (colour_folder / "taxonomy.txt").write_text("n000 n001\nn000 n002\n")
    entry = parse_benchmark("zs", {"protocol": "zeroshot", "root": str(colour_folder), "taxonomy": str(colour_folder / "taxonomy.txt")})
    with pytest.raises(Exception, match=r"n003.*not in the taxonomy"):
        evaluate(OracleModel(), "zs", entry)


def test_retrieval_oracle(tmp_path: Path) -> None:
    ann = write_karpathy(tmp_path)
    entry = parse_benchmark("r", {"protocol": "retrieval", "annotations": str(ann), "image_dir": str(tmp_path / "img"), "ks": [1, 2]})
    result = evaluate(OracleModel(), "r", entry)
    assert result["metrics"] == {"i2t_R@1": 1.0, "i2t_R@2": 1.0, "t2i_R@1": 1.0, "t2i_R@2": 1.0}
    assert result["counts"]["n_images"] == 3 and result["counts"]["n_captions"] == 6


def test_compositional_oracle(tmp_path: Path) -> None:
    json_dir, image_dir = write_sugarcrepe(tmp_path)
    entry = parse_benchmark("c", {"protocol": "compositional", "json_dir": str(json_dir), "image_dir": str(image_dir)})
    m = evaluate(OracleModel(), "c", entry)["metrics"]
    assert m["acc_replace_att"] == 1.0 and m["acc_swap_att"] == 0.0
    assert m["mean"] == 0.5 and m["item_accuracy"] == 0.75


def _hierarcaps_csv(path: Path, rows: list[tuple[int, list[str]]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "captions", "image_url"])
        for i, (image_id, levels) in enumerate(rows):
            writer.writerow([i, " => ".join(levels), f"http://x/val2014/COCO_val2014_{image_id:012d}.jpg"])
    return path


def test_pep_oracle_lorentz_and_euclidean_na(tmp_path: Path) -> None:
    for i, colour in enumerate(COLOURS, start=1):
        colour_image(tmp_path / "hc" / f"COCO_val2014_{i:012d}.jpg", colour)
    rows = [(i, ["thing", "shape", f"{c} shape", f"a {c} square"]) for i, c in enumerate(COLOURS, start=1)]
    csv_path = _hierarcaps_csv(tmp_path / "hc.csv", rows)
    raw = {"protocol": "pep", "hierarcaps_csv": str(csv_path), "image_dir": str(tmp_path / "hc")}
    entry = parse_benchmark("p", raw)
    result = evaluate(OracleModel("lorentz"), "p", entry)
    m = result["metrics"]
    # 3 images × 4 levels positives; pool = the 3 level-4 captions, own one excluded: 3 × 2.
    assert (m["n_positive"], m["n_negative"]) == (12, 6)
    assert result["pairs"]["pool"] == "level-4 captions of the samples"
    # Independent pairing: embed the known texts and colour images directly, list the pairs by
    # hand, score with sklearn.
    model = OracleModel("lorentz")
    colours = list(COLOURS)

    def txt(t: str) -> torch.Tensor:
        return model.encode_text(tokenize(t, 16)).double()

    def img(c: str) -> torch.Tensor:
        v = torch.zeros(1, VOCAB, dtype=torch.float64)
        v[0, word_token(c)] = 3.0
        return geometry.exp_map0(v, 1.0)

    phi = lambda t, c: geometry.exterior_angle(txt(t), img(c), 1.0).item()  # noqa: E731
    pos = [phi(t, c) for (_, levels), c in zip(rows, colours) for t in levels]
    neg = [phi(f"a {o} square", c) for c in colours for o in colours if o != c]
    from sklearn.metrics import roc_auc_score

    y = [1] * len(pos) + [0] * len(neg)
    assert m["raw_auc"] == pytest.approx(roc_auc_score(y, [-p for p in pos + neg]))
    p_ent = lambda a: max(0.0, 1 - 2 * a / math.pi)  # noqa: E731
    assert m["auc"] == pytest.approx(roc_auc_score(y, [p_ent(a) for a in pos + neg]))
    # A configured clean set and pool are used when present.
    clean = _hierarcaps_csv(tmp_path / "clean.csv", rows[:2])
    pool = tmp_path / "negative_pool.csv"
    pool.write_text("caption,degree\na blue square,0\nsomething else,1\n")
    entry = parse_benchmark("p", {**raw, "clean_csv": str(clean), "negative_pool": str(pool)})
    result = evaluate(OracleModel("lorentz"), "p", entry)
    assert (result["metrics"]["n_positive"], result["metrics"]["n_negative"]) == (8, 4)
    assert result["counts"]["n_pool"] == 2 and result["pairs"]["samples"] == str(clean)
    # Configured but absent: the whole split, with a warning recorded.
    entry = parse_benchmark("p", {**raw, "clean_csv": str(tmp_path / "absent.csv")})
    assert "warning" in evaluate(OracleModel("lorentz"), "p", entry)["pairs"]
    na = evaluate(OracleModel("euclidean"), "p", parse_benchmark("p", raw))
    assert na["status"] == "n/a" and na["metrics"]["auc"] is None and "reason" in na


def test_hierarcaps_protocol_oracle_radius_order(tmp_path: Path) -> None:
    # Bag-of-tokens: each level adds words, so its tangent norm (hence d(O, x)) grows with level.
    for i, colour in enumerate(COLOURS, start=1):
        colour_image(tmp_path / "hc" / f"COCO_val2014_{i:012d}.jpg", colour)
    rows = [(i, ["shape", f"{c} shape", f"small {c} shape", f"a small {c} shape on white"]) for i, c in enumerate(COLOURS, start=1)]
    entry = parse_benchmark("h", {"protocol": "hierarcaps", "hierarcaps_csv": str(_hierarcaps_csv(tmp_path / "hc.csv", rows)), "image_dir": str(tmp_path / "hc")})
    m = evaluate(OracleModel("lorentz"), "h", entry)["metrics"]
    assert m["kendall_tau"] == 1.0 and m["level_order_exact_share"] == 1.0
    assert m["mean_radius_by_level"] == sorted(m["mean_radius_by_level"])
    assert 0 < m["threshold_recall"] <= 1 and 0 < m["threshold_precision"] <= 1


def test_bad_image_is_skipped_and_counted_or_strict(tmp_path: Path) -> None:
    ann = write_karpathy(tmp_path, broken=True)
    raw = {"protocol": "retrieval", "annotations": str(ann), "image_dir": str(tmp_path / "img"), "ks": [1]}
    result = evaluate(OracleModel(), "r", parse_benchmark("r", raw))
    skipped = result["counts"]["skipped"]
    assert sum(skipped.values()) == 1, skipped
    assert result["counts"]["n_images"] == 3 and result["metrics"]["i2t_R@1"] == 1.0
    with pytest.raises(Exception, match="9.jpg"):
        evaluate(OracleModel(), "r", parse_benchmark("r", {**raw, "bad_data": "strict"}))
