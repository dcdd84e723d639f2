"""Primal structures of every kind rulescore sees into: dataclasses (plain, frozen, with slots),
a NamedTuple, plain objects (with ``__dict__`` and with ``__slots__``)."""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class FrozenPoint:
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class FrozenSlotPoint:
    x: float
    y: float


class PointNT(NamedTuple):
    x: float
    y: float


class PlainPoint:
    def __init__(self, x, y):
        self.x = x
        self.y = y


class SlotPoint:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y


@dataclass
class Model:
    weights: np.ndarray
    bias: float
    shape: tuple
    name: str
