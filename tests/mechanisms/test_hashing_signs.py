"""FeatureHashing's signs make hashed inner products unbiased.

Signed feature hashing (Weinberger et al., ICML 2009) sends feature ``i`` to column
``h(i)`` with a random sign ``s(i)`` in {-1, +1}; over the draw of the public hash,
``E[<phi(x), phi(y)>] = <x, y>``. Without the signs, two orthogonal one-hot rows
would collide with a positive inner product ``1 / n_components`` on average.
"""

import numpy as np

from skldp.mechanisms import FeatureHashing


def test_signs_are_plus_and_minus_one_about_equally_often():
    d = 4000
    sign = FeatureHashing(n_components=16, random_state=0).fit(np.zeros((1, d))).sign_
    assert set(np.unique(sign)) == {-1.0, 1.0}
    # Binomial(d, 1/2): 5 standard errors
    assert abs(np.mean(sign < 0) - 0.5) < 5 * np.sqrt(0.25 / d)


def test_inner_product_of_orthogonal_rows_is_zero_on_average_over_hashes():
    n_components, n_hashes = 4, 400
    X = np.eye(2)   # two orthogonal one-hot rows: <x, y> = 0
    dots = []
    for seed in range(n_hashes):
        H = FeatureHashing(n_components=n_components, clip=10.0, random_state=seed).fit_transform(X)
        dots.append(H[0] @ H[1])
    # each product is s0 s1 1[same column], variance 1 / n_components
    se = np.sqrt(1.0 / n_components / n_hashes)
    assert abs(np.mean(dots)) < 5 * se
