"""Cleaning HierarCaps for PEP (method.md §6.4): reference scorers, the ambiguity filter, the
rarely-retrieved negative pool, and the Table 1 false-negative analysis (``argent clean``)."""

from argent.cleaning.clean import KeepRule, rival_scores, score_table, select
from argent.cleaning.pool import degree_table, negative_pool, retrieval_degree
from argent.cleaning.scorers import (
    CheckpointScorer,
    EmbeddingCache,
    Scorer,
    ScorerUnavailable,
    TextScorer,
    Verifier,
    make_scorer,
    make_verifier,
)
from argent.cleaning.table1 import false_negative_table

__all__ = [
    "CheckpointScorer", "EmbeddingCache", "KeepRule", "Scorer", "ScorerUnavailable", "TextScorer", "Verifier",
    "degree_table", "false_negative_table", "make_scorer", "make_verifier", "negative_pool", "retrieval_degree",
    "rival_scores", "score_table", "select",
]
