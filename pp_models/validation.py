"""Argument checks shared by the zoo's factories.

Each raises ``TypeError`` for a value of the wrong kind and ``ValueError`` for a value
out of range, naming the argument, so that a bad call fails before any compilation or
sampling.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["as_data_matrix", "check_feature_names", "check_int", "check_positive",
           "check_positive_columns", "check_random_seed", "rng_from_seed"]


def as_data_matrix(
    X,
    name: str = "X",
    *,
    min_rows: int = 2,
    allow_nan: bool = False,
    axes: str = "n_observations, n_features",
) -> np.ndarray:
    """``X`` as a float64 2-D array with at least ``min_rows`` rows and one column.

    Accepts anything ``numpy.asarray`` does (lists, pandas DataFrames).

    Parameters
    ----------
    X : array_like
        The data.
    name : str
        The argument's name in error messages.
    min_rows : int
        Fewest rows accepted.
    allow_nan : bool
        If True, NaN passes through (the caller treats it as a missing entry); infinite
        values are rejected either way.
    axes : str
        What the two axes mean, for the message when ``X`` is not 2-D (e.g.
        ``"D observed dimensions, N samples"`` for a transposed layout).

    Raises
    ------
    TypeError
        ``X`` is not numeric.
    ValueError
        ``X`` is not 2-D, has too few rows or no columns, or has values that are not
        allowed (inf; NaN unless ``allow_nan``), naming the first offending entry.
    """
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric 2-D array: {err}") from None
    if arr.ndim != 2:
        hint = (
            "; reshape a single feature with X.reshape(-1, 1)"
            if axes == "n_observations, n_features"
            else ""
        )
        raise ValueError(
            f"{name} must be 2-D ({axes}), got {arr.ndim}-D shape {arr.shape}{hint}"
        )
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} has no columns")
    bad = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        kind = "infinite value(s)" if allow_nan else "non-finite value(s) (NaN or inf)"
        advice = "; use NaN for a missing entry" if allow_nan else ""
        raise ValueError(
            f"{name} has {int(bad.sum())} {kind}, first at row {i}, column {j}{advice}"
        )
    return arr


def check_feature_names(feature_names, n_columns: int, *, name: str = "feature_names",
                        counted: str = "X has {n} columns") -> list[str] | None:
    """``feature_names`` as a list of ``n_columns`` strings (None stays None).

    A single string is refused rather than read as one name per character. ``name`` and
    ``counted`` (with ``{n}``) name the argument and what it names in the messages.
    """
    if feature_names is None:
        return None
    if isinstance(feature_names, str | bytes):
        raise TypeError(f"{name} must be a sequence of names, one per column, got the "
                        f"string {feature_names!r}")
    names = [str(f) for f in feature_names]
    if len(names) != n_columns:
        raise ValueError(f"{name} has {len(names)} names but {counted.format(n=n_columns)}")
    return names


def check_int(value, name: str, *, minimum: int | None = None) -> int:
    """``value`` as a Python int, at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_positive(value, name: str) -> float:
    """``value`` as a finite float > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_positive_columns(value, name: str, n_columns: int) -> np.ndarray:
    """``value`` (one number, or one per column) as a float64 array of ``n_columns``
    finite numbers > 0."""
    if isinstance(value, str | bytes):
        raise TypeError(f"{name} must be a positive number or one per column, got {value!r}")
    if np.ndim(value) == 0:
        return np.full(n_columns, check_positive(value, name))
    values = list(np.ravel(np.asarray(value, dtype=object)))
    if np.ndim(value) != 1 or len(values) != n_columns:
        raise ValueError(f"{name} must be one number or {n_columns} (one per column), got "
                         f"shape {np.shape(value)}")
    return np.array([check_positive(v, f"{name}[{j}]") for j, v in enumerate(values)])


def check_random_seed(value, name: str = "random_seed"):
    """``value`` unchanged if it can seed numpy and PyMC, else a ``TypeError`` or
    ``ValueError`` naming ``name``.

    Accepted: None, an integer >= 0, a sequence of them (one per chain for PyMC), or a
    numpy ``Generator``, ``SeedSequence``, ``BitGenerator`` or ``RandomState``.
    """
    if value is None or isinstance(value, np.random.Generator | np.random.SeedSequence
                                   | np.random.BitGenerator | np.random.RandomState):
        return value
    many = isinstance(value, list | tuple | np.ndarray)
    for seed in np.ravel(np.asarray(value, dtype=object)) if many else (value,):
        if isinstance(seed, bool | np.bool_) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"{name} must be None, an integer >= 0, a sequence of them or a "
                            f"numpy Generator, got {value!r}")
        if seed < 0:
            raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def rng_from_seed(random_seed, name: str = "random_seed") -> np.random.Generator:
    """A numpy ``Generator`` seeded by ``random_seed``, after ``check_random_seed``.

    Parameters
    ----------
    random_seed : None, int, sequence of int, or numpy random object
        Anything ``check_random_seed`` accepts. An integer or sequence gives the same
        stream as ``numpy.random.default_rng(random_seed)``; None draws fresh entropy;
        a ``Generator`` is returned as is, so the caller's draws advance it.
    name : str
        The argument's name in error messages.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        ``random_seed`` is not one of the accepted kinds.
    ValueError
        ``random_seed`` holds a negative integer.
    """
    return np.random.default_rng(check_random_seed(random_seed, name))
