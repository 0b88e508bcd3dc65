#!/usr/bin/env python3
"""Fits the polynomials of src/runtime/kernels/fast_math.h and
prints them as C++ constants, each with its largest relative error (float
coefficients, evaluated in double) against Python's math library.

  exp(r), |r| <= ln(2)/2             degree 6   (exp(x) = 2^n exp(r))
  erf(x) / x as N(x^2) / D(x^2), x < 3.92  degrees 5 and 5 in x^2, D(0) = 1
  tanh(x) / x as T(x^2), |x| < 0.625   degree 5 in x^2 (past it, from exp)

The exp polynomial interpolates at Chebyshev points (numpy), in double. The
erf quotient is a near-minimax fit of relative error: linear least squares
on N - f D, reweighted by 1 / D of the previous round (Sanathanan-Koerner)
and by the previous round's error (Lawson), keeping the best round. One
quotient where there were two branches and an exp makes GELU twice as fast.

usage: scripts/fit_fast_math.py"""

import math

import numpy as np
from numpy.polynomial import chebyshev as C
from numpy.polynomial import polynomial as P

erf = np.vectorize(math.erf)

# erf(3.92) rounds to 1 in float: past it the quotient is clamped.
ERF_LAST = 3.92
# Below it tanh is the polynomial; above, 1 - 2 / (e^2x + 1) loses no digits.
TANH_SMALL = 0.625


def fit(f, lo, hi, degree):
    """Interpolates f at Chebyshev points of [lo, hi]; the power series in x."""
    series = C.Chebyshev.interpolate(f, degree, domain=[lo, hi])
    # domain = window: the identity map, so the coefficients are of x itself.
    return series.convert(kind=P.Polynomial, domain=[lo, hi], window=[lo, hi]).coef


def fit_quotient(f, hi, degree, rounds=200):
    """N, D of degree `degree` in u on [0, hi] with D(0) = 1, N / D ~ f(u) in relative error."""
    count = 3000
    u = (np.cos(np.pi * (np.arange(count) + 0.5) / count) + 1) / 2 * hi
    target = f(u)
    powers = u[:, None] ** np.arange(degree + 1)
    system = np.hstack([powers, -target[:, None] * powers[:, 1:]])
    lawson = np.full(count, 1.0 / count)
    denominator = np.ones(count)
    best = None
    for _ in range(rounds):
        scale = np.sqrt(lawson) / (np.abs(denominator) * target)
        solution = np.linalg.lstsq(system * scale[:, None], target * scale, rcond=None)[0]
        n, d = solution[: degree + 1], np.concatenate([[1.0], solution[degree + 1:]])
        denominator = P.polyval(u, d)
        error = np.abs(P.polyval(u, n) / denominator - target) / target
        if best is None or error.max() < best[0]:
            best = (error.max(), n, d)
        lawson = lawson * error / np.sum(lawson * error)
    return best[1], best[2]


def as_float(coefs):
    return np.float32(coefs).astype(np.float64)


def worst(approx, exact):
    return float(np.max(np.abs(approx - exact) / np.abs(exact)))


def main():
    half_ln2 = math.log(2) / 2
    exp_coefs = fit(np.exp, -half_ln2, half_ln2, 6)
    xs = np.linspace(-half_ln2, half_ln2, 20001)
    exp_error = worst(P.polyval(xs, as_float(exp_coefs)), np.exp(xs))

    def erf_over_root(u):
        r = np.sqrt(np.where(u > 0, u, 1))
        return np.where(u > 0, erf(r) / r, 2 / math.sqrt(math.pi))

    numerator, denominator = fit_quotient(erf_over_root, ERF_LAST * ERF_LAST, 5)
    assert np.all(P.polyval(np.linspace(0, ERF_LAST * ERF_LAST, 10001), denominator) > 0)
    xs = np.linspace(1e-6, ERF_LAST, 200001)
    u = xs * xs
    erf_error = worst(xs * P.polyval(u, as_float(numerator)) / P.polyval(u, as_float(denominator)), erf(xs))

    def tanh_over_root(u):
        r = np.sqrt(np.where(u > 0, u, 1))
        return np.where(u > 0, np.tanh(r) / r, 1.0)

    tanh_coefs = fit(tanh_over_root, 0, TANH_SMALL * TANH_SMALL, 5)
    xs = np.linspace(1e-6, TANH_SMALL, 100001)
    tanh_error = worst(xs * P.polyval(xs * xs, as_float(tanh_coefs)), np.tanh(xs))

    def array(name, coefs):
        return f"inline constexpr float {name}[{len(coefs)}] = {{" + ", ".join(f"{c:.9e}f" for c in coefs) + "};"

    print(f"// scripts/fit_fast_math.py; largest relative errors: exp {exp_error:.1e}, erf {erf_error:.1e}, "
          f"tanh {tanh_error:.1e}")
    print(array("kExp", exp_coefs))
    print(array("kErfNumerator", numerator))
    print(array("kErfDenominator", denominator))
    print(f"inline constexpr float kErfLast = {ERF_LAST:.2f}f;")
    print(array("kTanh", tanh_coefs))
    print(f"inline constexpr float kTanhSmall = {TANH_SMALL:.3f}f;")


if __name__ == "__main__":
    main()
