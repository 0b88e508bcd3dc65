#!/usr/bin/env python3
"""Fits the piecewise polynomials of runtime/kernels/elementwise/fast_erf.cpp
and prints them as C++ tables, with the largest error against math.erf.

erf is odd. Row k of the table serves [k/4, (k+1)/4) as a polynomial of
degree 7 in t = x - centre_k: row 0 is x * Q(x^2) (centre 0, odd powers
only, so that erf keeps its relative accuracy near 0); rows 1..15 are
interpolations of erf itself; row 16 is the constant 1, which erf rounds to
in float from x = 4 on. Each polynomial interpolates at Chebyshev points
(numpy), in double.

usage: scripts/fit_erf.py > table.txt"""

import math

import numpy as np
from numpy.polynomial import chebyshev as C
from numpy.polynomial import polynomial as P

SMALL_DEGREE = 3
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

    rows = [[0.0, small[0], 0.0, small[1], 0.0, small[2], 0.0, small[3]]] + pieces + [[1.0] + [0.0] * DEGREE]
    centres = [0.0] + [(k + 0.5) * STEP for k in range(1, PIECES)] + [0.0]

    worst = 0.0
    for k in range(PIECES):
        xs = np.linspace(max(k * STEP, 1e-6), (k + 1) * STEP, 20001)
        approx = P.polyval(xs - centres[k], np.float32(rows[k]).astype(np.float64))
        worst = max(worst, float(np.max(np.abs(approx - erf(xs)) / erf(xs))))

    def row(coefs):
        return "{" + ", ".join(f"{c:.9e}f" for c in coefs) + "}"

    print(f"// scripts/fit_erf.py: largest relative error with float coefficients {worst:.2e}")
    print(f"constexpr float kCentres[{PIECES + 1}] = {row(centres)};")
    print(f"constexpr float kPieces[{PIECES + 1}][{DEGREE + 1}] = {{")
    for coefs in rows:
        print(f"    {row(coefs)},")
    print("};")


if __name__ == "__main__":
    main()
