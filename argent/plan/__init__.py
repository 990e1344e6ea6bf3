"""Experiment groups (the protocol as data) and their cost before launch (``argent plan``)."""
