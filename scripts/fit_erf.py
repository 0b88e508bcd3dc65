#!/usr/bin/env python3
"""Fits the piecewise polynomials of runtime/kernels/elementwise/fast_erf.cpp
and prints them as C++ tables, with the largest error against math.erf.

erf is odd; for 0 <= x < 1/4, erf(x) = x * Q(x^2); on each [k/4, (k+1)/4),
k = 1..15, erf(x) = P_k(x - centre_k); from x = 4 on, erf(x) rounds to 1 in
float. Each polynomial interpolates at Chebyshev points (numpy), in double.

usage: scripts/fit_erf.py > table.txt"""

import math

import numpy as np
from numpy.polynomial import chebyshev as C
from numpy.polynomial import polynomial as P

SMALL_DEGREE = 5
DEGREE = 7
STEP = 0.25
PIECES = 16


def fit(f, lo, hi, degree, about):
    """Interpolates f at Chebyshev points of [lo, hi]; the power series in t = x - about."""
    t_range = [lo - about, hi - about]
    series = C.Chebyshev.interpolate(lambda t: f(t + about), degree, domain=t_range)
    # domain = window: the identity map, so the coefficients are of t itself.
    return list(series.convert(kind=P.Polynomial, domain=t_range, window=t_range).coef)


def main():
    erf = np.vectorize(math.erf)
    def erf_over_root(u):
        r = np.sqrt(u)
        return np.where(u > 0, erf(r) / np.where(u > 0, r, 1), 2 / math.sqrt(math.pi))

    small = fit(erf_over_root, 0.0, STEP * STEP, SMALL_DEGREE, 0.0)
    pieces = [fit(erf, k * STEP, (k + 1) * STEP, DEGREE, (k + 0.5) * STEP) for k in range(1, PIECES)]

    worst = 0.0
    xs = np.linspace(1e-6, STEP, 20001)
    approx = xs * P.polyval(xs * xs, np.float32(small).astype(np.float64))
    worst = max(worst, float(np.max(np.abs(approx - erf(xs)) / erf(xs))))
    for k, coefs in enumerate(pieces, start=1):
        xs = np.linspace(k * STEP, (k + 1) * STEP, 20001)
        approx = P.polyval(xs - (k + 0.5) * STEP, np.float32(coefs).astype(np.float64))
        worst = max(worst, float(np.max(np.abs(approx - erf(xs)) / erf(xs))))

    def row(coefs):
        return "{" + ", ".join(f"{c:.9e}f" for c in coefs) + "}"

    print(f"// scripts/fit_erf.py: largest relative error with float coefficients {worst:.2e}")
    print(f"constexpr float kSmall[{SMALL_DEGREE + 1}] = {row(small)};")
    print(f"constexpr float kPieces[{PIECES - 1}][{DEGREE + 1}] = {{")
    for coefs in pieces:
        print(f"    {row(coefs)},")
    print("};")


if __name__ == "__main__":
    main()
