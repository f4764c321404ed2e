"""Which xdist worker group a test belongs to: its family's, so that a cold run compiles
each family's kernels on one worker only (``tests/conftest.py`` assigns the groups).

A test belongs to the family whose folder its file is in (``tests/custom_ops/pydt/``,
``tests/inference/gibbs/pydt/``, ...), else to the family with the longest keyword its
node id (file or parameters) names, so a specific keyword ("mixture_of_trees") beats a
generic one ("collapsed"); else to none, and it is spread on its own.
"""

__all__ = ["FAMILY_TEST_KEYWORDS", "family_of"]

FAMILY_TEST_KEYWORDS = {
    "bayesian_sets": ("bayesian_sets",),
    "bhc": ("bhc", "hierarchical_clustering"),
    "dpm": ("dpm", "crp", "dirichlet_process", "collapsed", "niw", "write_your_own_model"),
    "finite_mixture": ("finite_mixture",),
    "ggm": ("ggm", "glasso", "graphical"),
    "hmm": ("hmm", "time_series"),
    "ibp_fa": ("ibp",),
    "iomm": ("iomm", "overlapping"),
    "lda": ("lda",),
    "lds": ("lds", "kalman"),
    "mixture_of_trees": ("tree_mixture", "mixture_of_trees", "mixtures_of_trees",
                         "spanning_tree", "chow_liu", "map_forest"),
    "pydt": ("pydt", "pitman_yor"),
}

FAMILY_KEYWORDS = tuple(sorted(FAMILY_TEST_KEYWORDS.items()))


def family_of(nodeid: str) -> str | None:
    """The family of a test: the family folder its file is in, else the family with the
    longest keyword its node id (file or parameters) names; None for neither."""
    folders = nodeid.split("::")[0].split("/")[:-1]
    for family, _ in FAMILY_KEYWORDS:
        if family in folders:
            return family
    low = nodeid.lower()
    found = [(len(key), family) for family, keys in FAMILY_KEYWORDS for key in keys
             if key in low]
    return max(found)[1] if found else None
