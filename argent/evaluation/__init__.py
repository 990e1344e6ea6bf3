"""Evaluation protocols (docs/architecture.md; docs/method.md §6).

One module per protocol, pure metric functions only: ``zeroshot``, ``retrieval``, ``hierarchy``
(WordNet metrics), ``pep``, ``hierarcaps_protocol``, ``compositional``, ``analysis``; chunked
scoring in ``chunked_similarity``. ``benchmarks`` validates the config entries, ``runner`` is the glue that
reads data and runs a model, ``cli`` is ``argent evaluate``.
"""
