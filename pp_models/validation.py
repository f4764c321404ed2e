"""Argument checks shared by the zoo's factories, estimators, steps and ``inference.fit``.

Each raises ``TypeError`` for a value of the wrong kind and ``ValueError`` for a value
out of range, naming the argument, so that a bad call fails before any compilation or
sampling.

Each public entry point's checks of its caller's input run inside :func:`checking_input`,
which re-raises their ``ValueError`` / ``TypeError`` as :class:`UserInputError` /
:class:`UserTypeError` (subclasses: callers catching ``ValueError`` see no change), so a
front end (``ppzoo``) tells a bad input, reported in one line, from an error raised by
the work after the checks, which is a bug.
"""

from __future__ import annotations

import contextlib
import numbers

import numpy as np

__all__ = [
    "USER_INPUT_ERRORS",
    "UserInputError",
    "UserTypeError",
    "as_binary_matrix",
    "as_data_matrix",
    "as_whole_numbers",
    "check_bool",
    "check_choice",
    "check_dask_client",
    "check_executor",
    "check_feature_names",
    "check_fixed_or_gamma",
    "check_gamma_prior",
    "check_int",
    "check_inverse_temperature",
    "check_ladder",
    "check_model",
    "check_positive",
    "check_positive_vector",
    "check_random_seed",
    "check_real",
    "check_row_indices",
    "check_sampling_sizes",
    "checking_input",
    "rng_from_seed",
]


class UserInputError(ValueError):
    """A value the caller gave is out of range or inconsistent with the others."""


class UserTypeError(TypeError):
    """A value the caller gave is of the wrong kind."""


#: What a check of the caller's input raises.
USER_INPUT_ERRORS = (UserInputError, UserTypeError)


@contextlib.contextmanager
def checking_input():
    """Mark the ``ValueError`` / ``TypeError`` raised inside as the caller's error.

    Used as a context manager or a decorator around checks of a caller's input (and
    nothing else): a plain ``ValueError`` or ``TypeError`` becomes a
    :class:`UserInputError` or :class:`UserTypeError` with the same message, the original
    as its cause; subclasses of either (already marked, or another library's own) pass
    unchanged.
    """
    try:
        yield
    except (ValueError, TypeError) as err:
        if type(err) is ValueError:
            raise UserInputError(*err.args) from err
        if type(err) is TypeError:
            raise UserTypeError(*err.args) from err
        raise


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
            f"{name} has {int(bad.sum())} {kind}, first at row {i}, column {j} "
            f"(counting from 0){advice}"
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


def as_binary_matrix(X, name: str = "X", *, min_rows: int = 1):
    """``X`` as a binary (0/1) 2-D matrix: a ``scipy.sparse`` CSR matrix stays sparse, any
    other input becomes a float64 C-contiguous array.

    A sparse matrix is never densified: its stored values are checked, its explicit
    zeros kept (they are zeros), and a CSR or CSC matrix is returned as is (other formats
    are converted to CSR). Booleans and integers are accepted.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix
        The data.
    name : str
        The argument's name in error messages.
    min_rows : int
        Fewest rows accepted.

    Returns
    -------
    scipy.sparse.csr_matrix, scipy.sparse.csc_matrix or ndarray

    Raises
    ------
    TypeError
        ``X`` is not numeric.
    ValueError
        ``X`` is not 2-D, has too few rows or no columns, or holds a value other than 0
        and 1 (NaN included), naming the first one.
    """
    import scipy.sparse as sp

    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_observations, n_features), got "
                             f"{X.ndim}-D shape {X.shape}")
        if not (np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)):
            raise TypeError(f"{name} must be numeric, got dtype {X.dtype}")
        if X.format not in ("csr", "csc"):
            X = X.tocsr()
        values = X.data
    else:
        if hasattr(X, "to_numpy"):
            X = X.to_numpy()
        try:
            X = np.ascontiguousarray(X, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name} must be a numeric 2-D array: {err}") from None
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_observations, n_features), got "
                             f"{X.ndim}-D shape {X.shape}")
        values = X.ravel()
    if X.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {X.shape[0]}")
    if X.shape[1] < 1:
        raise ValueError(f"{name} has no columns")
    if values.dtype != np.bool_ and not _all_binary(values):
        bad = (values != 0) & (values != 1)
        first = values[np.argmax(bad)]
        kind = "a sparse matrix's stored values" if sp.issparse(X) else "its entries"
        raise ValueError(f"{name} must be binary (0/1): {int(bad.sum())} of {kind} are not, "
                         f"e.g. {first!r}")
    return X


def _all_binary(values, chunk: int = 1 << 18) -> bool:
    # in chunks: temporaries that stay in cache, not two more arrays the size of the data
    for start in range(0, values.size, chunk):
        v = values[start:start + chunk]
        if ((v != 0) & (v != 1)).any():
            return False
    return True


def check_row_indices(indices, name: str, n_rows: int) -> np.ndarray:
    """``indices`` as a non-empty int64 array of distinct row numbers in ``[0, n_rows)``.

    Negative numbers are refused rather than counted from the end, and booleans rather
    than read as 0 and 1.

    Raises
    ------
    TypeError
        ``indices`` does not hold integers.
    ValueError
        ``indices`` is empty, not 1-D, out of range or repeats a row, naming the offender.
    """
    arr = np.asarray(indices)
    if arr.dtype == np.bool_ or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must be a sequence of integer row numbers, got {indices!r}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of row numbers, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: give at least one row number")
    arr = arr.astype(np.int64)
    out = (arr < 0) | (arr >= n_rows)
    if out.any():
        raise ValueError(f"{name} holds row {int(arr[np.argmax(out)])}, out of range for "
                         f"{n_rows} rows (0..{n_rows - 1})")
    uniq, counts = np.unique(arr, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{name} repeats row {int(uniq[np.argmax(counts > 1)])}; give each "
                         "row once")
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


def check_sampling_sizes(draws, tune, chains, cores=None
                         ) -> tuple[int, int, int, int | None]:
    """``draws`` (>= 1), ``tune`` (>= 0), ``chains`` (>= 1) and ``cores`` (None, or
    >= 1) of an MCMC run, as Python ints; ``TypeError`` / ``ValueError`` naming the
    first bad one (:func:`check_int`)."""
    return (check_int(draws, "draws", minimum=1), check_int(tune, "tune", minimum=0),
            check_int(chains, "chains", minimum=1),
            None if cores is None else check_int(cores, "cores", minimum=1))


def check_model(model, name: str = "model"):
    """``model`` if it is a ``pymc.Model``, else a ``TypeError`` naming ``name``."""
    import pymc as pm  # here: the command line checks its flags without importing PyMC

    if not isinstance(model, pm.Model):
        raise TypeError(f"{name} must be a pymc.Model, got {type(model).__name__}")
    return model


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
    if not _is_real(value):
        raise TypeError(f"{name} must be a positive number, got {value!r}")
    return check_real(value, name, above=0.0)


def check_positive_vector(value, name: str, size: int, *, what: str | None = None
                          ) -> np.ndarray:
    """``value`` (a number, broadcast, or a sequence of ``size`` numbers) as a float64
    array of shape ``(size,)``, every entry finite and > 0 (e.g. a Dirichlet parameter);
    ``what`` says what the ``size`` entries are, for the shape message."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a positive number or {size} of them, got {value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a positive number or {size} of them: {err}") from None
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise ValueError(f"{name} must be a number or have shape ({size},)"
                         f"{f' ({what})' if what else ''}, got shape {arr.shape}")
    bad = ~np.isfinite(arr) | (arr <= 0)
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(f"{name} must be finite and > 0: {int(bad.sum())} entries are not, "
                         f"first at {j} ({arr[j]})")
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


def check_executor(value, name: str = "executor"):
    """``value`` if it is a ``concurrent.futures.Executor`` that still takes work.

    Raises ``TypeError`` for anything else (a Dask ``Client`` itself is named: its
    ``get_executor()`` is the executor) and ``ValueError`` for an executor that was shut
    down or whose pool broke, or a Dask client's executor whose client is closed: before
    any work is sent.
    """
    from concurrent.futures import Executor

    if not isinstance(value, Executor):
        hint = (" (for a Dask client pass client.get_executor())"
                if _is_dask_client(value) else "")
        raise TypeError(f"{name} must be a concurrent.futures.Executor{hint}, got "
                        f"{type(value).__name__}")
    client = getattr(value, "_client", None)
    if client is not None and _is_dask_client(client):
        check_dask_client(client, name)
    # the standard pools mark a shut-down or broken pool on these attributes
    if getattr(value, "_shutdown_thread", False) or getattr(value, "_shutdown", False):
        raise ValueError(f"{name}: the executor was shut down; it takes no more work")
    if getattr(value, "_broken", False):
        raise ValueError(f"{name}: the executor's pool is broken (a worker died): "
                         f"{value._broken}")
    return value


def check_dask_client(value, name: str = "client"):
    """``value`` if it is a running ``dask.distributed.Client`` (``TypeError`` for
    another kind of object, ``ValueError`` for a closed client), without importing Dask.
    """
    if not _is_dask_client(value):
        raise TypeError(f"{name} must be a dask.distributed.Client, got {type(value).__name__}")
    status = getattr(value, "status", None)
    if status != "running":
        raise ValueError(f"{name}: the Dask client is {status or 'not connected'}; "
                         "connect a running one (Client(address))")
    return value


def _is_dask_client(value) -> bool:
    cls = type(value)
    return cls.__name__ == "Client" and cls.__module__.split(".")[0] == "distributed"
def check_inverse_temperature(value, name: str = "beta") -> float:
    """``value`` as a float in [0, 1]: the inverse temperature of a power posterior
    p(theta) p(X | theta)^beta (0: the prior, 1: the posterior)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise ValueError(f"{name} must be in [0, 1] (an inverse temperature), got {value}")
    return value


def check_ladder(values, name: str = "ladder") -> np.ndarray:
    """``values`` as a float64 array of inverse temperatures: at least 2, each in
    [0, 1], strictly increasing, the last one 1 (the posterior)."""
    if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of inverse temperatures, got {values!r}")
    betas = [check_inverse_temperature(v, f"{name}[{i}]") for i, v in enumerate(values)]
    if len(betas) < 2:
        raise ValueError(f"{name} needs at least 2 temperatures, got {len(betas)}")
    arr = np.asarray(betas, dtype=np.float64)
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing, got {arr.tolist()}")
    if arr[-1] != 1.0:
        raise ValueError(f"{name} must end at 1 (the posterior), got {arr[-1]}")
    return arr
