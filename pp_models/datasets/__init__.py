"""Data sets shipped with the package (with provenance beside each file)."""

from pp_models.datasets.reuters import TextCorpus, load_reuters

__all__ = ["TextCorpus", "load_reuters"]
