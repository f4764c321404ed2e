"""A stream of uniforms that compiles into the loop that reads it.

Kernels take a ``numpy.random.Generator`` (architecture: randomness passed in
explicitly). Numba calls a generator's ``random()`` through the bit generator's function
pointer, which the compiler cannot inline. In a loop whose work per draw is short (a
SparseLDA token update), that call is a noticeable share of the loop's time. A kernel
that needs one uniform per inner iteration can instead seed this stream from the
generator once per call (:func:`stream_from`, one draw of the generator) and advance it
inline (:func:`next_uniform`, a few integer operations): its draws are still a function
of the generator's state alone.

The generator is xoshiro256+ (Blackman & Vigna 2021, "Scrambled linear pseudorandom
number generators", ACM TOMS 47(4), §3 and §10.4): 256 bits of state, period
2^256 - 1, its upper 53 bits recommended for doubles. Its four state words are filled
by SplitMix64 from one 63-bit integer of the generator, as the authors recommend for
seeding. The state is a tuple of four ``uint64``, so that the compiler keeps it in
registers.
"""

from __future__ import annotations

from numba import uint64

from custom_ops.jit import njit_exact

__all__ = ["next_uniform", "splitmix64", "stream_from"]

_GOLDEN_GAMMA = 0x9E3779B97F4A7C15
_TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


@njit_exact(inline="always")
def splitmix64(x):
    """SplitMix64 (Steele, Lea & Flood 2014): the next state ``x + 0x9E37...`` and its
    mixed output, as a pair of ``uint64``."""
    x = x + uint64(_GOLDEN_GAMMA)
    y = x
    y = (y ^ (y >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    y = (y ^ (y >> uint64(27))) * uint64(0x94D049BB133111EB)
    return x, y ^ (y >> uint64(31))


@njit_exact(inline="always")
def stream_from(rng):
    """A fresh xoshiro256+ state seeded from one draw of the generator ``rng`` (its
    state advances by one ``integers`` draw)."""
    x = uint64(rng.integers(0, 9223372036854775807))
    x, a = splitmix64(x)
    x, b = splitmix64(x)
    x, c = splitmix64(x)
    x, d = splitmix64(x)
    return (a, b, c, d)


@njit_exact(inline="always")
def next_uniform(state):
    """``(u, new_state)``: a uniform in [0, 1) from the upper 53 bits of xoshiro256+'s
    output, and the advanced state."""
    s0, s1, s2, s3 = state
    result = s0 + s3
    t = s1 << uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << uint64(45)) | (s3 >> uint64(19))
    return (result >> uint64(11)) * _TWO_TO_MINUS_53, (s0, s1, s2, s3)
