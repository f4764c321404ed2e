"""pp_models.validation: the shared argument checks."""

import numpy as np
import pytest

from pp_models.validation import (
    as_data_matrix,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_random_seed,
    check_real,
    rng_from_seed,
)


def test_as_data_matrix_returns_float64_copy_of_good_data():
    X = [[1, 2], [3, 4]]
    arr = as_data_matrix(X)
    assert arr.dtype == np.float64 and arr.shape == (2, 2)
    np.testing.assert_array_equal(arr, np.array(X, float))


@pytest.mark.parametrize(
    "X,kwargs,err,msg",
    [
        ("abc", {}, TypeError, "X must be a numeric 2-D array"),
        (np.zeros(3), {}, ValueError, r"2-D \(n_observations, n_features\).*reshape"),
        (np.zeros(3), {"axes": "D dims x N samples"}, ValueError,
         r"2-D \(D dims x N samples\), got 1-D shape \(3,\)$"),
        (np.zeros((1, 2)), {}, ValueError, "at least 2 rows, got 1"),
        (np.zeros((3, 0)), {}, ValueError, "has no columns"),
        (np.array([[0.0, 1.0], [np.nan, np.nan]]), {}, ValueError,
         r"2 non-finite value\(s\) \(NaN or inf\), first at row 1, column 0 \(counting from 0\)"),
        (np.array([[0.0, np.inf], [np.nan, 1.0]]), {"allow_nan": True}, ValueError,
         r"1 infinite value\(s\), first at row 0, column 1 \(counting from 0\); use NaN for "
         "a missing entry"),
        (np.array([[0.0, -np.inf], [1.0, 1.0]]), {"allow_nan": False}, ValueError,
         "non-finite"),
    ],
)
def test_as_data_matrix_rejects(X, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        as_data_matrix(X, **kwargs)


def test_as_data_matrix_allow_nan_keeps_missing_entries():
    X = np.array([[0.0, np.nan], [2.0, 3.0]])
    arr = as_data_matrix(X, "Y", allow_nan=True)
    assert np.isnan(arr[0, 1]) and np.isnan(arr).sum() == 1
    with pytest.raises(ValueError, match="Y has 1 non-finite"):
        as_data_matrix(X, "Y")  # NaN is refused unless allowed


@pytest.mark.parametrize("seed", [7, np.int64(7), [3, 1], np.random.SeedSequence(7)])
def test_rng_from_seed_gives_default_rngs_stream(seed):
    rng = rng_from_seed(seed)
    assert isinstance(rng, np.random.Generator)
    np.testing.assert_array_equal(rng.random(5), np.random.default_rng(seed).random(5))


def test_rng_from_seed_passes_a_generator_through_and_none_gives_fresh_entropy():
    gen = np.random.default_rng(0)
    assert rng_from_seed(gen) is gen
    assert isinstance(rng_from_seed(None), np.random.Generator)


@pytest.mark.parametrize(
    "seed,err,msg",
    [(-1, ValueError, "must be >= 0"), ([1, -2], ValueError, "must be >= 0"),
     (1.5, TypeError, "must be None, an integer"), (True, TypeError, "must be None"),
     ("7", TypeError, "must be None")],
)
def test_rng_from_seed_refuses_what_check_random_seed_refuses(seed, err, msg):
    with pytest.raises(err, match=f"^seed {msg}"):
        check_random_seed(seed, "seed")
    with pytest.raises(err, match=f"^seed {msg}"):
        rng_from_seed(seed, "seed")
    with pytest.raises(err, match=f"^random_seed {msg}"):
        rng_from_seed(seed)


@pytest.mark.parametrize(
    "value,kwargs,err,msg",
    [(True, {}, TypeError, "^n must be an integer, got True$"),
     (np.bool_(True), {}, TypeError, "must be an integer"),
     (2.0, {}, TypeError, "must be an integer, got 2.0"),
     ("3", {}, TypeError, "must be an integer"),
     (0, {"minimum": 1}, ValueError, "^n must be >= 1, got 0$"),
     (5, {"maximum": 4}, ValueError, "^n must be <= 4, got 5$"),
     (1, {"minimum": 2, "maximum": 4}, ValueError, r"^n must be in \[2, 4\], got 1$")],
)
def test_check_int_refuses(value, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        check_int(value, "n", **kwargs)


def test_check_int_returns_a_python_int():
    out = check_int(np.int32(3), "n", minimum=3, maximum=3)
    assert out == 3 and type(out) is int


@pytest.mark.parametrize(
    "value,kwargs,err,msg",
    [(True, {}, TypeError, "^x must be a number, got True$"),
     ("1", {"above": 0}, TypeError, "^x must be a number > 0, got '1'$"),
     (np.nan, {}, ValueError, "^x must be a finite number, got nan$"),
     (np.inf, {"minimum": 0}, ValueError, "finite number >= 0, got inf"),
     (0.0, {"above": 0}, ValueError, "^x must be a finite number > 0, got 0.0$"),
     (1.0, {"minimum": 0, "below": 1}, ValueError, r"finite number in \[0, 1\), got 1.0$"),
     (0.0, {"above": 0, "below": 1}, ValueError, r"in \(0, 1\)"),
     (2.5, {"maximum": 2}, ValueError, "<= 2, got 2.5")],
)
def test_check_real_refuses(value, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        check_real(value, "x", **kwargs)


def test_check_real_accepts_its_bounds_and_numpy_numbers():
    assert check_real(np.float32(0.5), "x", minimum=0.5, maximum=0.5) == 0.5
    assert check_real(3, "x", above=2, below=4) == 3.0
    assert check_positive(np.int64(2), "x") == 2.0
    with pytest.raises(ValueError, match="x must be a finite number > 0"):
        check_positive(0, "x")


def test_check_bool_and_check_choice():
    assert check_bool(np.bool_(False), "flag") is False
    for bad in (0, 1, "yes", None):
        with pytest.raises(TypeError, match="^flag must be True or False, got"):
            check_bool(bad, "flag")
    assert check_choice("vi", "loss", ("binder", "vi")) == "vi"
    with pytest.raises(ValueError, match="^loss must be 'binder' or 'vi', got 'x'$"):
        check_choice("x", "loss", ("binder", "vi"))
    with pytest.raises(ValueError, match="^k must be one of 'a', 'b', 'c', 'd', got"):
        check_choice(np.array([1]), "k", ("a", "b", "c", "d"))


def test_check_fixed_or_gamma():
    from pp_models.validation import check_fixed_or_gamma, check_gamma_prior

    assert check_fixed_or_gamma(2, "lam") == 2.0
    assert check_fixed_or_gamma([2, 0.5], "lam") == (2.0, 0.5)
    assert check_gamma_prior((1, 3), "lam") == (1.0, 3.0)
    with pytest.raises(ValueError, match=r"^lam \(Gamma rate\) must be a finite number > 0"):
        check_fixed_or_gamma((1.0, -1.0), "lam")
    with pytest.raises(ValueError, match=r"^lam: a Gamma prior is a pair \(shape, rate\)"):
        check_fixed_or_gamma((1.0, 2.0, 3.0), "lam")
    with pytest.raises(TypeError, match=r"^lam must be a number > 0 or a pair"):
        check_fixed_or_gamma("big", "lam")
    with pytest.raises(ValueError, match=r"^lam must be a finite number > 0, got 0.0"):
        check_fixed_or_gamma(0.0, "lam")


def test_as_binary_matrix_keeps_sparse_input_sparse():
    import scipy.sparse as sp

    from pp_models.validation import as_binary_matrix

    X = sp.coo_array(np.array([[1, 0], [0, 1], [1, 1]], dtype=np.int8))
    out = as_binary_matrix(X)
    assert sp.issparse(out) and out.format == "csr"
    csc = sp.csc_matrix(np.eye(3))
    assert as_binary_matrix(csc) is csc
    # an explicitly stored zero is a zero
    explicit = sp.csr_matrix((np.array([0.0, 1.0]), (np.array([0, 1]), np.array([0, 1]))),
                             shape=(2, 2))
    assert as_binary_matrix(explicit) is explicit
    dense = as_binary_matrix([[True, False]], min_rows=1)
    assert dense.dtype == np.float64 and dense.flags.c_contiguous
    with pytest.raises(ValueError, match=r"Y must be binary \(0/1\): 1 of a sparse"):
        as_binary_matrix(sp.csr_matrix(np.array([[0.5, 1.0]])), "Y")
    with pytest.raises(ValueError, match="X needs at least 2 rows, got 1"):
        as_binary_matrix(np.ones((1, 3)), min_rows=2)


def test_check_positive_vector():
    from pp_models.validation import check_positive_vector

    np.testing.assert_array_equal(check_positive_vector(2, "a", 3), [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match=r"a must be finite and > 0: 1 entries are not, "
                                         r"first at 1 \(-1.0\)"):
        check_positive_vector([1, -1, 2], "a", 3)
    with pytest.raises(ValueError, match=r"shape \(3,\), got shape \(2,\)"):
        check_positive_vector([1, 1], "a", 3)
    with pytest.raises(TypeError, match="a must be a positive number or 3 of them"):
        check_positive_vector("x", "a", 3)


def test_checking_input_marks_the_callers_errors_and_nothing_else():
    from pp_models.validation import (
        USER_INPUT_ERRORS,
        UserInputError,
        UserTypeError,
        check_int,
        checking_input,
    )

    @checking_input()
    def checks(value):
        return check_int(value, "draws", minimum=1)

    with pytest.raises(UserInputError, match="draws must be >= 1, got 0") as bad_value:
        checks(0)
    with pytest.raises(UserTypeError, match="draws must be an integer") as bad_kind:
        checks("many")
    # still what callers catch, with the original as the cause
    assert isinstance(bad_value.value, ValueError) and isinstance(bad_kind.value, TypeError)
    assert type(bad_value.value.__cause__) is ValueError
    assert checks(3) == 3

    class OtherError(ValueError):
        pass

    # another library's subclass, or an error raised outside the block, is not marked
    with pytest.raises(OtherError) as other, checking_input():
        raise OtherError("theirs")
    assert not isinstance(other.value, USER_INPUT_ERRORS)
    with pytest.raises(ValueError) as outside:
        check_int(0, "draws", minimum=1)
    assert not isinstance(outside.value, USER_INPUT_ERRORS)
