"""hiershapes: the embedded procedural benchmark (WordNet shape taxonomy, scenes, captions, all splits)."""
