"""argent: hierarchical image–text representation learning in hyperbolic space, as one workflow."""

__version__ = "0.1.0"
