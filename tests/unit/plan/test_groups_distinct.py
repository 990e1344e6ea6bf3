"""A seed, variant or size listed twice in a group (or in ``runs:``) is an error where the groups are
parsed (issue 45 C): it was planned and counted twice, both runs trained into one folder."""

import re

import pytest

from argent.config import ConfigError, load_config
from argent.config.groups import groups_section
from argent.plan.dag import build_dag
from tests.fixtures import ROOT


@pytest.mark.parametrize("group, said", [
    ({"variants": ["clip"], "seeds": [0, 0]}, "groups.main.seeds[1]: 0 is listed twice (first at seeds[0])"),
    ({"variants": ["clip", "meru", "clip"]}, "groups.main.variants[2]: 'clip' is listed twice (first at variants[0])"),
    ({"variants": ["clip"], "sizes": ["tiny", "tiny"]}, "groups.main.sizes[1]: 'tiny' is listed twice"),
])
def test_a_repeated_seed_variant_or_size_is_named(group, said):
    with pytest.raises(ConfigError, match="^" + re.escape(said)):
        groups_section({"groups": {"main": group}})


def test_runs_seeds_twice_stops_the_dag_build(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"results: {tmp_path / 'results'}\nruns: {{seeds: [1, 2, 1]}}\n")
    with pytest.raises(ConfigError, match=r"runs.seeds\[2\]: 1 is listed twice"):
        build_dag(load_config(config, base_dir=ROOT).raw, ROOT)  # snakemake -n
