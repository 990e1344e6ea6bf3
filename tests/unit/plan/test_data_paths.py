"""`argent plan` costs a config on a machine without its data and names every data path it could not see
(issue 53: before, only WordNet's was named; every GRIT, CC3M, ImageNet and COCO path went unsaid)."""

import io

from argent.plan.cli import merged_workflow, run
from tests.fixtures import ROOT


def _plan_output(config: str) -> str:
    out = io.StringIO()
    run(merged_workflow(ROOT / "config" / config, [], ROOT), ROOT, out)
    return out.getvalue()


def test_the_papers_config_names_every_data_path_this_machine_lacks():
    text = _plan_output("paper.yaml")
    head = text.split("\ngroup ")[0] + "\n"
    for path in ("/datasets/grit/shards/{00000..02047}.tar", "/datasets/cc3m/shards/{00000..00331}.tar",
                 "/datasets/imagenet/val", "/datasets/imagenet/imagenet_isa.txt",
                 "/datasets/coco/annotations/captions_val2017.json", "/datasets/coco/val2017",
                 "/datasets/flickr30k/dataset_flickr30k.json", "/datasets/nltk_data/corpora/wordnet.zip",
                 "/datasets/things/images", "/datasets/hierarcaps/hierarcaps_test.csv"):
        assert f": {path}\n" in head, path
    assert "groups.main: data.train_shards: /datasets/grit" in head
    assert "benchmarks.sugarcrepe.json_dir (optional: skipped when absent): /datasets/sugarcrepe" in head


def test_the_embedded_default_names_no_data_it_needs():
    head = _plan_output("config.yaml").split("\ngroup ")[0]
    named = [line for line in head.splitlines()[1:] if line.startswith("  ")]
    assert all("(optional" in line for line in named), named  # at most the real-data extras it may skip
