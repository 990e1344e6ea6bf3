"""The cleaning stage (``argent clean``): reference scorers, the ambiguity filter, the rarely-retrieved
negative pool for PEP, and the Table 1 false-negative analysis (docs/method.md §6.4, §6.5).

Modules: ``config`` (the ``clean:`` section), ``run`` (the run), ``cli`` (the command line),
``clean`` (keep rule), ``pool`` (retrieval degree, pool), ``table1``, ``scorers`` (``make_scorer``),
``scorer_base`` / ``text_scorer`` / ``image_scorers`` (the scorers).
"""
