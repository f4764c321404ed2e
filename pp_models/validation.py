"""Argument checks shared by the zoo's factories, estimators, steps and ``inference.fit``.

Each raises ``TypeError`` for a value of the wrong kind and ``ValueError`` for a value
out of range, naming the argument, so that a bad call fails before any compilation or
sampling.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_data_matrix",
    "as_whole_numbers",
    "check_bool",
    "check_choice",
    "check_feature_names",
    "check_fixed_or_gamma",
    "check_gamma_prior",
    "check_int",
    "check_positive",
    "check_positive_vector",
    "check_random_seed",
    "check_real",
    "rng_from_seed",
]


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


def as_whole_numbers(values, name: str, what: str = "values") -> np.ndarray:
    """``values`` (an integer array, or floats holding whole numbers) as int64, every
    entry >= 0: counts, category codes.

    Raises
    ------
    TypeError
        ``values`` is not of an integer or floating dtype (bool included).
    ValueError
        An entry is NaN, infinite, fractional or negative; the message names ``name``
        and ``what`` the entries are (``"docs: counts must be >= 0 (found -1)"``).
    """
    values = np.asarray(values)
    if values.dtype == np.bool_ or not (np.issubdtype(values.dtype, np.integer)
                                        or np.issubdtype(values.dtype, np.floating)):
        raise TypeError(f"{name}: expected integer {what}, got dtype {values.dtype}")
    if np.issubdtype(values.dtype, np.floating):
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name}: {what} must be finite (found NaN or inf)")
        if np.any(values != np.round(values)):
            raise ValueError(f"{name}: {what} must be whole numbers (found non-integer "
                             "values)")
    out = values.astype(np.int64)
    if out.size and out.min() < 0:
        raise ValueError(f"{name}: {what} must be >= 0 (found {out.min()})")
    return out


def check_feature_names(feature_names, n_columns: int) -> list[str] | None:
    """``feature_names`` as a list of ``n_columns`` strings (None stays None).

    A single string is refused rather than read as one name per character.
    """
    if feature_names is None:
        return None
    if isinstance(feature_names, str | bytes):
        raise TypeError(f"feature_names must be a sequence of names, one per column, got the "
                        f"string {feature_names!r}")
    names = [str(f) for f in feature_names]
    if len(names) != n_columns:
        raise ValueError(f"feature_names has {len(names)} names but X has {n_columns} columns")
    return names


def _is_integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def check_int(value, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """``value`` (a Python or NumPy integer, not a bool) as a Python int in
    ``[minimum, maximum]`` (either bound may be None).

    Raises
    ------
    TypeError
        ``value`` is not an integer.
    ValueError
        ``value`` is out of range.
    """
    if not _is_integer(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and maximum is not None:
        if not minimum <= value <= maximum:
            raise ValueError(f"{name} must be in [{minimum}, {maximum}], got {value}")
    elif minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    elif maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def _range_text(minimum, maximum, above, below) -> str:
    """The range of :func:`check_real`, said as ``> 0``, ``>= 1`` or ``in [0, 1)``."""
    low, low_open = (above, True) if above is not None else (minimum, False)
    high, high_open = (below, True) if below is not None else (maximum, False)
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def check_real(value, name: str, *, minimum: float | None = None,
               maximum: float | None = None, above: float | None = None,
               below: float | None = None) -> float:
    """``value`` (a real number, not a bool) as a finite float in a range.

    Parameters
    ----------
    value
        The value to check.
    name : str
        The argument's name in error messages.
    minimum, maximum : float, optional
        Inclusive bounds.
    above, below : float, optional
        Exclusive bounds (``value > above``, ``value < below``); one of a side's two
        bounds at most.

    Raises
    ------
    TypeError
        ``value`` is not a real number.
    ValueError
        ``value`` is NaN, infinite or out of range; the message says the range, e.g.
        ``"discount must be a finite number in [0, 1), got 1.0"``.
    """
    where = _range_text(minimum, maximum, above, below)
    if not _is_real(value):
        raise TypeError(f"{name} must be a number{' ' + where if where else ''}, "
                        f"got {value!r}")
    value = float(value)
    ok = np.isfinite(value)
    ok = ok and (minimum is None or value >= minimum) and (maximum is None or value <= maximum)
    ok = ok and (above is None or value > above) and (below is None or value < below)
    if not ok:
        raise ValueError(f"{name} must be a finite number{' ' + where if where else ''}, "
                         f"got {value}")
    return value


def check_positive(value, name: str) -> float:
    """``value`` as a finite float > 0 (:func:`check_real` with ``above=0``)."""
    return check_real(value, name, above=0.0)


def check_positive_vector(value, name: str, size: int, *, what: str | None = None
                          ) -> np.ndarray:
    """``value`` (a number, broadcast, or a sequence of ``size`` numbers) as a float64
    array of shape ``(size,)``, every entry finite and > 0 (e.g. a Dirichlet parameter);
    ``what`` says what the ``size`` entries are, for the shape message."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a positive number or a vector of {size}, got "
                        f"{value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a positive number or a vector of {size}, got "
                        f"{value!r}") from None
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    elif arr.shape != (size,):
        raise ValueError(f"{name} must be a scalar or a vector of length {size}"
                         f"{f' ({what})' if what else ''}, got shape {arr.shape}")
    bad = ~np.isfinite(arr) | (arr <= 0)
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(f"{name} must be > 0 and finite, got {value!r} (entry {j}: "
                         f"{arr[j]})")
    return np.ascontiguousarray(arr)


def check_gamma_prior(value, name: str) -> tuple[float, float]:
    """A Gamma prior given as a pair ``(shape, rate)`` of finite numbers > 0, as a tuple of
    floats; the message names the entry (``"alpha (Gamma rate)"``)."""
    if not isinstance(value, tuple | list):
        raise TypeError(f"{name}: a Gamma prior is a pair (shape, rate), got {value!r}")
    if len(value) != 2:
        raise ValueError(f"{name}: a Gamma prior is a pair (shape, rate), got {value!r}")
    return (check_positive(value[0], f"{name} (Gamma shape)"),
            check_positive(value[1], f"{name} (Gamma rate)"))


def check_fixed_or_gamma(value, name: str) -> float | tuple[float, float]:
    """A fixed value (a finite number > 0, returned as a float) or a Gamma prior on it (a
    pair ``(shape, rate)``, returned as a tuple: :func:`check_gamma_prior`)."""
    if isinstance(value, tuple | list):
        return check_gamma_prior(value, name)
    if not _is_real(value):
        raise TypeError(f"{name} must be a number > 0 or a pair (shape, rate) of a Gamma "
                        f"prior, got {value!r}")
    return check_positive(value, name)


def check_bool(value, name: str) -> bool:
    """``value`` (True or False, a NumPy bool too) as a Python bool; anything else, even
    0 or 1, is a ``TypeError``."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_choice(value, name: str, choices):
    """``value`` unchanged if it is one of ``choices``, else a ``ValueError`` listing
    them."""
    if isinstance(value, str | int | float | bool | None) and value in choices:
        return value
    listed = " or ".join(repr(c) for c in choices) if len(choices) <= 3 else \
        "one of " + ", ".join(repr(c) for c in choices)
    raise ValueError(f"{name} must be {listed}, got {value!r}")


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
        if not _is_integer(seed):
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
