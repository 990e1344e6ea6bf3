"""Encoders, tokenizer and the dual encoder."""

from argent.models.dual_encoder import DualEncoder, build_model
from argent.models.tokenizer import tokenize

__all__ = ["DualEncoder", "build_model", "tokenize"]
