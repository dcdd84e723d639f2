"""The entry points combining modes: jacobian, hessian, hessian_reverse, diaghessian, forwarddiff."""

import numpy as np

import zygotepy as zp


def test_jacobian_shape():
    A = np.arange(6.0).reshape(2, 3)
    (J,) = zp.jacobian(lambda x: A @ x, np.ones(3))
    np.testing.assert_allclose(J, A)
    (J2,) = zp.jacobian(lambda m: m.sum(axis=0), np.ones((2, 3)))
    assert J2.shape == (3, 2, 3)
