"""The negatives stage (``argent mine``): concreteness-ranked hard negatives, a ConcretePlant-style
generator (docs/method.md §7.1).

Modules: ``config`` (the ``negatives:`` section, ``MiningConfig``), ``run`` (the run), ``cli`` (the
command line), ``generator`` (``NegativeGenerator``: slots, ranking, edits), ``operators`` (edit
operators), ``tagger`` (WordNet + closed-class tagger), ``norms`` (Brysbaert concreteness norms),
``io`` (caption sources, writers). WordNet itself is loaded by ``argent.wordnet``.
"""
