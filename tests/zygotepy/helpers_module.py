"""Functions defined in another module, imported by name in the engine tests."""

import numpy as np


def scaled_square(x):
    return 3.0 * x * x


def calls_scaled_square(x):
    return scaled_square(x) + 1.0


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return self.k * np.sin(x)
