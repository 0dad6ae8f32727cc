"""Digamma and trigamma for the population models (ARX `Gamma`), in IEEE arithmetic.

Both are scalar functions following the usual method step by step — the same steps,
in the same order, as the Java code the estimates are compared with, because the
solvers that use them are sensitive to the last bits (see `pitman`):

- digamma: reflection ψ(x) = ψ(1 − x) − π/tan(πx) for x < 0; a Taylor term for
  0 < x ≤ 1e-6; otherwise the recurrence ψ(x) = ψ(x + 1) − 1/x up to x ≥ 12 and the
  asymptotic (de Moivre) series, exact to machine precision there.
- trigamma, ARX's variant on purpose: ARX lifts the argument only to 8 but adds the
  asymptotic tail only from 12, so below 12 it returns the partial sum Σ 1/(x + j)²
  without the tail (trigamma(10) is 0 there).  ARX uses trigamma only in the Jacobian
  of Pitman's equations: the root found is a root of the correct equations, but the
  Jacobian steers Newton's steps, and so whether and where the solver converges.
  Following ARX here is what makes "not available" and the digits agree with ARX.

The logarithm inside digamma is `strict_log`, the algorithm of Java's StrictMath.log
(fdlibm), which ARX calls: the C library's log is correctly rounded and differs from
it in the last bit for some arguments (ln 43346, say), enough to send a wandering
Newton search elsewhere.  A pole gives ±inf or nan, never an exception.
"""

from __future__ import annotations

import math
import struct

EULER_GAMMA = 0.57721566490153286060651209008240243104215933593992
ZETA_2 = (math.pi * math.pi) / 6.0  # trigamma(1)
ZETA_3 = 1.202056903159594285399738161511449990764986292  # −tetragamma(1) / 2

_DIGAMMA_LARGE = 12.0
_DIGAMMA_SMALL = 1e-6
_TRIGAMMA_LIFT = 8.0
_TRIGAMMA_TAIL = 12.0
_TRIGAMMA_SMALL = 1e-4

# ψ(x) ~ ln x − 1/(2x) − 1/(12x²) + 1/(120x⁴) − 1/(252x⁶) + 1/(240x⁸) − 1/(132x¹⁰)
_D1, _D2, _D3, _D4, _D5 = 1 / 12, 1 / 120, 1 / 252, 1 / 240, 1 / 132
# ψ1(x) ~ 1/(2x²) + (1 + B2/x² + B4/x⁴ + … + B10/x¹⁰)/x, B = Bernoulli numbers
_B2, _B4, _B6, _B8, _B10 = 1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66


def divide(numerator: float, denominator: float) -> float:
    """numerator / denominator in IEEE arithmetic (±inf or nan at 0, no exception)."""
    if denominator == 0.0:
        if numerator == 0.0 or math.isnan(numerator):
            return math.nan
        return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)
    return numerator / denominator


def digamma(x: float) -> float:
    """ψ(x) = d ln Γ(x) / dx (ARX `Gamma.digamma`, Minka's lightspeed method)."""
    if math.isinf(x) or math.isnan(x):
        return math.nan
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        return digamma(1.0 - x) + divide(math.pi, math.tan(-math.pi * x))
    if x <= _DIGAMMA_SMALL:
        return (-EULER_GAMMA - 1.0 / x) + ZETA_2 * x
    result = 0.0
    while x < _DIGAMMA_LARGE:
        result -= 1.0 / x
        x += 1.0
    r = 1.0 / x
    result += strict_log(x) - 0.5 * r
    r *= r
    result -= r * (_D1 - r * (_D2 - r * (_D3 - r * (_D4 - r * _D5))))
    return result


def trigamma_arx(x: float) -> float:
    """ψ1(x) = dψ/dx as ARX's `Gamma.trigamma` computes it (tail omitted below 12).

    For x ≥ 12 this is the true trigamma; below 12 see the module docstring.
    """
    if math.isinf(x) or math.isnan(x):
        return math.nan
    if x == 0.0:
        return -math.inf  # ARX's value at the pole
    if x < 0.0:
        r = divide(math.pi, math.sin(-math.pi * x))
        return -trigamma_arx(1.0 - x) + r * r
    if x <= _TRIGAMMA_SMALL:
        return (1.0 / (x * x)) + ZETA_2 + (-2.0 * ZETA_3) * x
    result = 0.0
    while x < _TRIGAMMA_LIFT:
        result += 1.0 / (x * x)
        x += 1.0
    if x >= _TRIGAMMA_TAIL:
        r = 1.0 / (x * x)
        result += 0.5 * r + (1.0 + r * (_B2 + r * (_B4 + r * (_B6 + r * (_B8 + r * _B10))))) / x
    return result


def gamma_ratio_times_power(t: float, a: float, base: float) -> tuple[float, float]:
    """Γ(t + 1) / Γ(t + a) · base^a two ways, as ARX takes both: via ln Γ and via Γ.

    Each is nan where its route is undefined (ln Γ of a non-positive argument, Γ at a
    pole) and ±inf where it overflows; the caller keeps the valid ones.
    """
    power = _power(base, a)
    if t + 1.0 > 0.0 and t + a > 0.0:
        via_log = _exp(math.lgamma(t + 1.0) - math.lgamma(t + a)) * power
    else:
        via_log = math.nan
    via_gamma = divide(_gamma(t + 1.0), _gamma(t + a)) * power
    return via_log, via_gamma


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _power(base: float, exponent: float) -> float:
    try:
        value = base**exponent
    except OverflowError:
        return math.inf
    except ZeroDivisionError:  # 0 to a negative power
        return math.inf
    return value if isinstance(value, float) else math.nan  # complex: negative base


def _gamma(x: float) -> float:
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf
    except ValueError:  # a pole (0, −1, −2, …)
        return math.nan


# --------------------------------------------------------------------------- fdlibm log
#
# strict_log follows e_log.c of fdlibm, the library behind Java's StrictMath.log:
#   Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
#   Developed at SunSoft, a Sun Microsystems, Inc. business.
#   Permission to use, copy, modify, and distribute this software is freely granted,
#   provided that this notice is preserved.
# Method: x = 2^k·(1 + f) with √2/2 < 1 + f < √2; log(1 + f) = f − s·(f − R(z)) with
# s = f/(2 + f), z = s², R a minimax polynomial; result k·ln2 + log(1 + f), with ln2
# split in a high and a low part so that k·ln2_hi is exact.

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_TWO54 = 1.80143985094819840000e16
_LG = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)
_WORD = struct.Struct("<Q")
_DOUBLE = struct.Struct("<d")


def _words(x: float) -> tuple[int, int]:
    """(high 32 bits as a signed int, low 32 bits) of a double, as fdlibm reads them."""
    bits: int = _WORD.unpack(_DOUBLE.pack(x))[0]
    high = bits >> 32
    return (high - (1 << 32) if high & 0x80000000 else high), bits & 0xFFFFFFFF


def _double(high: int, low: int) -> float:
    value: float = _DOUBLE.unpack(_WORD.pack(((high & 0xFFFFFFFF) << 32) | low))[0]
    return value


def strict_log(x: float) -> float:
    """ln x exactly as Java's StrictMath.log (fdlibm e_log.c) rounds it."""
    hx, lx = _words(x)
    k = 0
    if hx < 0x00100000:  # x < 2^-1022: zero, negative or subnormal
        if ((hx & 0x7FFFFFFF) | lx) == 0:
            return -math.inf
        if hx < 0:
            return math.nan
        k -= 54
        x *= _TWO54
        hx, lx = _words(x)
    if hx >= 0x7FF00000:  # inf or nan
        return x + x
    k += (hx >> 20) - 1023
    hx &= 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000
    x = _double(hx | (i ^ 0x3FF00000), lx)  # normalize x or x/2 into [√2/2, √2)
    k += i >> 20
    f = x - 1.0
    dk = float(k)
    if (0x000FFFFF & (2 + hx)) < 3:  # |f| < 2^-20
        if f == 0.0:
            return 0.0 if k == 0 else dk * _LN2_HI + dk * _LN2_LO
        r = f * f * (0.5 - 0.33333333333333333 * f)
        return f - r if k == 0 else dk * _LN2_HI - ((r - dk * _LN2_LO) - f)
    s = f / (2.0 + f)
    z = s * s
    i = hx - 0x6147A
    w = z * z
    j = 0x6B851 - hx
    t1 = w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    t2 = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6])))
    i |= j
    r = t2 + t1
    if i > 0:
        half_square = 0.5 * f * f
        if k == 0:
            return f - (half_square - s * (half_square + r))
        return dk * _LN2_HI - ((half_square - (s * (half_square + r) + dk * _LN2_LO)) - f)
    if k == 0:
        return f - s * (f - r)
    return dk * _LN2_HI - ((s * (f - r) - dk * _LN2_LO) - f)
