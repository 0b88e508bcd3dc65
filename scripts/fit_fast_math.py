#!/usr/bin/env python3
"""Fits the polynomials of src/runtime/kernels/elementwise/fast_math.h and
prints them as C++ constants, each with its largest relative error (float
coefficients, evaluated in double) against Python's math library.

  exp(r), |r| <= ln(2)/2         degree 6   (exp(x) = 2^n exp(r))
  erf(x) / x as Q(x^2), x < 1    degree 5 in x^2
  erfc(x) exp(x^2), 1 <= x <= 4  degree 10 in x - 5/2  (erf = 1 - exp(-x^2) R)

Each polynomial interpolates at Chebyshev points (numpy), in double.

usage: scripts/fit_fast_math.py"""

import math

import numpy as np
from numpy.polynomial import chebyshev as C
from numpy.polynomial import polynomial as P

erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)

SPLIT, LAST = 1.0, 4.0
CENTRE = (SPLIT + LAST) / 2


def fit(f, lo, hi, degree, about=0.0):
    """Interpolates f at Chebyshev points of [lo, hi]; the power series in t = x - about."""
    t_range = [lo - about, hi - about]
    series = C.Chebyshev.interpolate(lambda t: f(t + about), degree, domain=t_range)
    # domain = window: the identity map, so the coefficients are of t itself.
    return series.convert(kind=P.Polynomial, domain=t_range, window=t_range).coef


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

    small = fit(erf_over_root, 0.0, SPLIT * SPLIT, 5)
    xs = np.linspace(1e-6, SPLIT, 20001)
    small_error = worst(xs * P.polyval(xs * xs, as_float(small)), erf(xs))

    erfcx = fit(lambda x: erfc(x) * np.exp(x * x), SPLIT, LAST, 10, CENTRE)
    xs = np.linspace(SPLIT, LAST, 20001)
    large_error = worst(1 - np.exp(-xs * xs) * P.polyval(xs - CENTRE, as_float(erfcx)), erf(xs))

    def array(name, coefs):
        return f"inline constexpr float {name}[{len(coefs)}] = {{" + ", ".join(f"{c:.9e}f" for c in coefs) + "};"

    print(f"// scripts/fit_fast_math.py; largest relative errors: exp {exp_error:.1e}, "
          f"erf below {SPLIT:g} {small_error:.1e}, erf above {large_error:.1e}")
    print(array("kExp", exp_coefs))
    print(array("kErfSmall", small))
    print(f"inline constexpr float kErfSplit = {SPLIT:.1f}f, kErfLast = {LAST:.1f}f, kErfcxCentre = {CENTRE:.2f}f;")
    print(array("kErfcx", erfcx))


if __name__ == "__main__":
    main()
