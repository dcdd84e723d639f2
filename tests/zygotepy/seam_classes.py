"""Classes defined in another module whose Python special methods Python calls implicitly. Each
one's body goes through ``body``: a call with a registered rule (a custom derivative that
tracing its body would not give), ``zp.dropgrad`` and an in-place write into a fresh buffer, so a
body run without the engine seeing it gives a wrong value or gradient."""

import functools

import numpy as np

import rulescore as rc
import zygotepy as zp

#: The custom derivative of ``scaled``: tracing its body would give 3.
RULE_SLOPE = 300.0


def scaled(x):
    return x * 3.0


@rc.rrule.register(scaled)
def _scaled_rrule(x):
    return scaled(x), lambda ybar: (rc.NoTangent(), ybar * RULE_SLOPE)


@rc.frule.register(scaled)
def _scaled_frule(tangents, x):
    return scaled(x), tangents[1] * RULE_SLOPE


def body(x):
    """3x + x**2 as a value; RULE_SLOPE + x as a derivative, when every call is seen."""
    acc = np.zeros(2)
    acc += scaled(x)
    return np.sum(acc) / 2 + zp.dropgrad(x) * x


def expected(x):
    return 3.0 * x + x * x, RULE_SLOPE + x


class Prop:
    def __init__(self, x):
        self.x = x

    @property
    def v(self):
        return body(self.x)


class Cached:
    def __init__(self, x):
        self.x = x

    @functools.cached_property
    def v(self):
        return body(self.x)


class Setter:
    def __init__(self):
        self._v = 0.0

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self._v = body(value)


class Deleter:
    def __init__(self, x, out):
        self.x, self.out = x, out

    @property
    def v(self):
        return 0.0

    @v.deleter
    def v(self):
        self.out.append(body(self.x))


class Generating:
    def __init__(self, x):
        self.x = x

    def __iter__(self):
        yield body(self.x)


class Stepping:
    def __init__(self, x):
        self.x, self.done = x, False

    def __iter__(self):
        return self

    def __next__(self):
        if self.done:
            raise StopIteration
        self.done = True
        return body(self.x)


class OldSequence:
    def __init__(self, x):
        self.x = x

    def __getitem__(self, i):
        if i > 0:
            raise IndexError(i)
        return body(self.x)


class Managed:
    def __init__(self, x):
        self.x, self.closed = x, None

    def __enter__(self):
        return body(self.x)

    def __exit__(self, *exc):
        self.closed = body(self.x)
        return False


class Store:
    def __init__(self, x):
        self.x, self.items = x, {}

    def __getitem__(self, i):
        return body(self.x) * i

    def __setitem__(self, i, value):
        self.items[i] = body(value)

    def __delitem__(self, i):
        self.items[i] = body(self.x)

    def __len__(self):
        self.length = body(self.x)
        return 1

    def __contains__(self, item):
        self.seen = body(self.x)
        return True


class Arithmetic:
    def __init__(self, x):
        self.x = x

    def __add__(self, other):
        return body(self.x) + other

    def __radd__(self, other):
        return other + body(self.x)

    def __neg__(self):
        return -body(self.x)

    def __call__(self, k):
        return body(self.x) * k


class Base:
    def __init__(self, x):
        self.v = body(x)


class Inherits(Base):
    pass


class Allocates:
    def __new__(cls, x):
        obj = super().__new__(cls)
        obj.v = body(x)
        return obj


class Dynamic:
    def __init__(self, x):
        self._x = x

    def __getattr__(self, name):
        return body(self._x)


class Intercepts:
    def __init__(self, x):
        self._x = x

    def __getattribute__(self, name):
        if name == "v":
            return body(object.__getattribute__(self, "_x"))
        return object.__getattribute__(self, name)


class Assigns:
    def __setattr__(self, name, value):
        object.__setattr__(self, name, body(value))
