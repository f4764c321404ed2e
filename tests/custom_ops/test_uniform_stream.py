"""The inline stream of uniforms (``custom_ops.uniform_stream``):

- SplitMix64 and xoshiro256+ give the published outputs (SplitMix64 seeded with 0;
  xoshiro256+ from the state (1, 2, 3, 4), worked by hand from the paper's update);
- a stream seeded from a generator equals an independent Python-integer version of the
  two algorithms, seeded with the integer the generator draws;
- its uniforms lie in [0, 1) and pass a Kolmogorov-Smirnov test; the same generator
  state gives the same stream and advances the generator.
"""

import numpy as np
from numba import uint64
from scipy import stats

from custom_ops.jit import njit_exact
from custom_ops.uniform_stream import next_uniform, splitmix64, stream_from

MASK = (1 << 64) - 1
#: rejection level of the KS test: the chance that a correct stream fails it
LEVEL = 1e-4


@njit_exact
def _uniforms(rng, n):
    out = np.empty(n)
    stream = stream_from(rng)
    for i in range(n):
        out[i], stream = next_uniform(stream)
    return out


@njit_exact
def _uniforms_from_state(s0, s1, s2, s3, n):
    out = np.empty(n)
    stream = (s0, s1, s2, s3)
    for i in range(n):
        out[i], stream = next_uniform(stream)
    return out


@njit_exact
def _splitmix_first(x):
    return splitmix64(x)[1]


def _splitmix_py(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    y = x
    y = ((y ^ (y >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    y = ((y ^ (y >> 27)) * 0x94D049BB133111EB) & MASK
    return x, y ^ (y >> 31)


def _xoshiro_py(state, n):
    """xoshiro256+'s raw 64-bit outputs, Blackman & Vigna (2021) §3, in Python ints."""
    s = list(state)
    out = []
    for _ in range(n):
        out.append((s[0] + s[3]) & MASK)
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & MASK
    return out


def test_splitmix64_seeded_with_zero_gives_the_published_first_output():
    assert int(_splitmix_first(uint64(0))) == 0xE220A8397B1DCDAF


def test_xoshiro256plus_from_one_two_three_four_gives_its_first_outputs():
    # result = s0 + s3 = 5; after one update s0 = 7 and s3 = rotl(6, 45) = 6 << 45
    assert _xoshiro_py((1, 2, 3, 4), 2) == [5, 7 + (6 << 45)]
    got = _uniforms_from_state(uint64(1), uint64(2), uint64(3), uint64(4), 2)
    np.testing.assert_array_equal(got, [(5 >> 11) * 2.0**-53, ((7 + (6 << 45)) >> 11) * 2.0**-53])


def test_stream_equals_an_independent_version_seeded_with_the_generators_integer():
    seed_int = int(np.random.default_rng(3).integers(0, 9223372036854775807))
    x, state = seed_int, []
    for _ in range(4):
        x, out = _splitmix_py(x)
        state.append(out)
    want = np.array([(r >> 11) * 2.0**-53 for r in _xoshiro_py(state, 1000)])
    got = _uniforms(np.random.default_rng(3), 1000)
    np.testing.assert_array_equal(got, want)


def test_uniforms_are_in_the_unit_interval_and_uniform():
    u = _uniforms(np.random.default_rng(11), 200_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > LEVEL


def test_same_generator_state_same_stream_and_the_generator_advances():
    rng = np.random.default_rng(5)
    a = _uniforms(rng, 50)
    b = _uniforms(rng, 50)
    np.testing.assert_array_equal(a, _uniforms(np.random.default_rng(5), 50))
    assert not np.array_equal(a, b)
