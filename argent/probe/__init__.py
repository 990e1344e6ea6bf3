"""Taxonomic-generalisation probe (TaxGen protocol on a frozen dual encoder); docs/probe.md.

Modules, in the order data flows: ``config`` (the ``probe:`` section), ``protocol`` (concepts,
questions, split, shuffles, ablations), ``projector`` (the trained read-out), ``metrics``,
``conditions`` (every condition × seed on embeddings), ``run`` (a model and its image folder ->
result JSON), ``figure``, ``cli``.
"""
