"""A fuzzer of the seams: generated programs reach traced values through code Python runs
implicitly, on instances of classes defined in another module.

Each seam program is two modules. The library module holds a generated program's ``f``
(tests/zygotepy/program_fuzzer.py), ``smooth_sin``, whose registered rule is exact but whose body
tracing gives a wrong derivative (so a rule skipped anywhere shows as a wrong gradient), and a
class reaching ``f`` through one protocol (a property, ``cached_property``, a setter,
``__iter__``, ``__next__``, ``__enter__``, ``__getitem__``, ``__contains__``, ``__len__``,
``__call__``, an inherited ``__init__``, ``__new__``, ``__getattr__``, ``__setattr__``, an operator),
with an in-place write into a fresh NumPy buffer inside. The main module's ``g`` takes the numbers
and two arguments that are not numbers (an enum member and a config dict holding a sentinel) that
choose the branch: traced by mistake, they flip it. ``g`` runs from a file, or (``mode="cli"``) as
``python -c`` text. :func:`check` compares value and gradient with central finite differences,
as the program fuzzer does.

>>> outcome = check(seam_program_from_seed(5))
>>> outcome.kind in ("right", "rejected")
True
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from tests.zygotepy import program_fuzzer as pf

#: Each protocol: the class (in the library module; ``CALL`` is ``f(*ARGS)`` on the numbers it
#: holds) and the statements of ``g`` reaching it (``args`` is the tuple of numbers; they end by
#: setting ``value``).
PROTOCOLS: dict[str, tuple[str, str]] = {
    "property": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n    @property\n"
                 "    def v(self):\n        return BODY\n", "value = lib.Seam(*args).v"),
    "cached_property": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n"
                        "    @functools.cached_property\n    def v(self):\n        return BODY\n",
                        "value = lib.Seam(*args).v"),
    "setter": ("class Seam:\n    def __init__(self):\n        self.a = ()\n        self.out = 0.0\n\n"
               "    @property\n    def v(self):\n        return self.out\n\n    @v.setter\n"
               "    def v(self, a):\n        self.a = a\n        self.out = BODY\n",
               "s = lib.Seam()\ns.v = args\nvalue = s.v"),
    "__iter__": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n    def __iter__(self):\n"
                 "        yield BODY\n", "value = sum(lib.Seam(*args))"),
    "__iter__ comprehension": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n"
                               "    def __iter__(self):\n        yield BODY\n",
                               "value = [v for v in lib.Seam(*args)][0]"),
    "__next__": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n        self.done = False\n\n"
                 "    def __iter__(self):\n        return self\n\n    def __next__(self):\n"
                 "        if self.done:\n            raise StopIteration\n        self.done = True\n"
                 "        return BODY\n", "value = 0.0\nfor v in lib.Seam(*args):\n    value = value + v"),
    "__enter__": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n    def __enter__(self):\n"
                  "        return BODY\n\n    def __exit__(self, *exc):\n        return False\n",
                  "with lib.Seam(*args) as v:\n    value = v"),
    "__getitem__": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n"
                    "    def __getitem__(self, i):\n        return BODY * i\n", "value = lib.Seam(*args)[1]"),
    "__contains__": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n"
                     "    def __contains__(self, item):\n        self.seen = BODY\n        return True\n",
                     "s = lib.Seam(*args)\nassert 0 in s\nvalue = s.seen"),
    "__len__": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n    def __len__(self):\n"
                "        self.seen = BODY\n        return 1\n",
                "s = lib.Seam(*args)\nassert len(s) == 1\nvalue = s.seen"),
    "__call__": ("class Seam:\n    def __call__(self, *a):\n        self.a = a\n        return BODY\n",
                 "value = lib.Seam()(*args)"),
    "inherited __init__": ("class Base:\n    def __init__(self, *a):\n        self.a = a\n"
                           "        self.v = BODY\n\n\n"
                           "class Seam(Base):\n    pass\n", "value = lib.Seam(*args).v"),
    "__new__": ("class Seam:\n    def __new__(cls, *a):\n        self = super().__new__(cls)\n"
                "        self.a = a\n"
                "        self.v = BODY\n        return self\n", "value = lib.Seam(*args).v"),
    "__getattr__": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n"
                    "    def __getattr__(self, name):\n        return BODY\n",
                    "value = lib.Seam(*args).anything"),
    "__setattr__": ("class Seam:\n    def __setattr__(self, name, a):\n"
                    "        object.__setattr__(self, 'a', a)\n"
                    "        object.__setattr__(self, name + '_out', BODY)\n",
                    "s = lib.Seam()\ns.v = args\nvalue = s.v_out"),
    "operator": ("class Seam:\n    def __init__(self, *a):\n        self.a = a\n\n"
                 "    def __radd__(self, other):\n"
                 "        return other + BODY\n", "value = 0.0 + lib.Seam(*args)"),
}

#: The protocol body: ``f`` through an in-place write into a fresh buffer and the exact rule.
BODY = "_through_buffer(smooth_sin(f(*self.a)))"

LIBRARY_TAIL = '''

def smooth_sin(t):
    """sin(t) by value; its body's derivative is 1 (wrong), its rule's is cos(t)."""
    return np.sin(zp.dropgrad(t)) + (t - zp.dropgrad(t))


@rc.rrule.register(smooth_sin)
def _smooth_sin_rrule(t):
    return smooth_sin(t), lambda ybar: (rc.NoTangent(), ybar * np.cos(t))


@rc.frule.register(smooth_sin)
def _smooth_sin_frule(tangents, t):
    return smooth_sin(t), tangents[1] * np.cos(t)


def _through_buffer(v):
    acc = np.zeros(2)
    acc += v
    acc *= 0.5
    return np.sum(acc)


'''

MAIN = '''\
import enum
import numpy as np
import LIBRARY_NAME as lib


def g(*rest):
    *args, act, cfg = rest
    args = tuple(args)
    if act is lib.Act.ON and cfg["mode"] is lib.SENTINEL and act in {{lib.Act.ON}}:
{body}
        return value
    return 0.25 * np.sum(args[0])
'''


@dataclasses.dataclass(frozen=True)
class SeamProgram:
    """A generated seam program: the library module's and the main module's source, ``g``'s
    numeric arguments, the protocol and how it runs (``file`` or ``cli``)."""

    library: str
    main: str
    args: tuple[Any, ...]
    protocol: str
    mode: str
    seed: int | None = None

    def report(self) -> str:
        shown = ", ".join(pf._literal(a) for a in self.args)
        return (f"# seed {self.seed}, protocol {self.protocol}, run as {self.mode}\n# --- library module\n"
                f"{self.library}\n# --- main\n{self.main}\nzp.withgradient(g, {shown}, Act.ON, "
                "{'mode': SENTINEL})\n")


def seam_program_from_seed(seed: int, cli_every: int = 0) -> SeamProgram:
    """The seam program of ``seed`` (every ``cli_every``-th seed runs as ``python -c``).

    >>> seam_program_from_seed(3).report() == seam_program_from_seed(3).report()
    True
    """
    base = pf.program_from_seed(seed)
    protocol = list(PROTOCOLS)[seed % len(PROTOCOLS)]
    cls, use = PROTOCOLS[protocol]
    imports = "import enum\n\nimport rulescore as rc\nimport zygotepy as zp"
    library = (base.source.replace("import zygotepy as zp", imports) + LIBRARY_TAIL
               + "class Act(enum.Enum):\n    ON = 1\n    OFF = 2\n\n\nSENTINEL = object()\n\n\n"
               + cls.replace("BODY", BODY))
    main = MAIN.format(body=textwrap.indent(use, " " * 8))
    mode = "cli" if cli_every and seed % cli_every == 0 else "file"
    return SeamProgram(library, main, base.args, protocol, mode, seed)


_DIR = tempfile.TemporaryDirectory(prefix="zpseam-")
_count = itertools.count()


def _write(program: SeamProgram) -> tuple[str, str]:
    name = f"zpseam_lib_{next(_count)}"
    Path(_DIR.name, f"{name}.py").write_text(program.library)
    return name, program.main.replace("LIBRARY_NAME", name)


def _load(name: str, main: str) -> Any:
    if _DIR.name not in sys.path:
        sys.path.insert(0, _DIR.name)
    path = Path(_DIR.name, f"{name}_main.py")
    path.write_text(main)
    spec = importlib.util.spec_from_file_location(f"{name}_main", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CLI_RUN = '''
import json, sys, warnings
import numpy as np
import zygotepy as zp
sys.path.insert(0, {dir!r})
warnings.simplefilter("ignore")
args = tuple(np.asarray(a) if isinstance(a, list) else a for a in json.loads({args!r}))
try:
    val, grads = zp.withgradient(g, *args, lib.Act.ON, {{"mode": lib.SENTINEL}})
    print(json.dumps(["ok", float(val), [None if x is None else np.asarray(x, dtype=float).tolist()
                                          for x in grads]]))
except (zp.UntraceableError, zp.NotScalarError) as exc:
    print(json.dumps(["refused", type(exc).__name__ + ": " + str(exc)]))
'''


def check(program: SeamProgram) -> pf.Outcome:
    """Differentiate ``program``'s ``g`` and judge it against finite differences."""
    import zygotepy as zp

    name, main = _write(program)
    module = _load(name, main)
    lib = sys.modules[name]
    extra = (lib.Act.ON, {"mode": lib.SENTINEL})
    as_program = pf.Program(program.report(), program.args, frozenset({program.protocol}), program.seed)

    def plain(*args: Any) -> Any:
        return module.g(*args, *extra)

    try:
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            value = float(plain(*program.args))
            coarse, fine = pf._fd(plain, program.args, 1e-4), pf._fd(plain, program.args, 1e-5)
    except Exception as exc:
        return pf.Outcome("rejected", f"fails in NumPy: {type(exc).__name__}", as_program)
    if not np.isfinite(value) or abs(value) > 1e8:
        return pf.Outcome("rejected", "value not finite or huge", as_program)
    for c, g in zip(coarse, fine, strict=True):
        if np.max(np.abs(np.asarray(c) - g), initial=0.0) > 1e-6 * (1.0 + np.max(np.abs(g), initial=0.0)):
            return pf.Outcome("rejected", "finite differences unstable", as_program)
    try:
        if program.mode == "cli":
            code = main.replace(f"import {name} as lib", f"import sys\nsys.path.insert(0, {_DIR.name!r})\n"
                                f"import {name} as lib") + _CLI_RUN.format(
                dir=_DIR.name, args=json.dumps([np.asarray(a).tolist() if np.ndim(a) else float(a)
                                                for a in program.args]))
            run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
            if run.returncode != 0:
                return pf.Outcome("crashed", "python -c failed", as_program, run.stderr[-3000:])
            result = json.loads(run.stdout.strip().splitlines()[-1])
            if result[0] == "refused":
                return pf.Outcome("refused", pf._reason(Exception(result[1])), as_program, result[1])
            val, grads = result[1], tuple(result[2])
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                val, grads = zp.withgradient(module.g, *program.args, *extra)
    except pf.REFUSALS as exc:
        return pf.Outcome("refused", pf._reason(exc), as_program, str(exc))
    except Exception as exc:
        import traceback

        return pf.Outcome("crashed", type(exc).__name__, as_program, traceback.format_exc())
    problems = []
    if not np.isclose(float(val), value, rtol=1e-10, atol=1e-12):
        problems.append(f"value {val!r}, expected {value!r}")
    numeric, rest = grads[:len(program.args)], grads[len(program.args):]
    if any(r is not None for r in rest):
        problems.append(f"gradients of the enum and the config: {rest!r}, expected None")
    for k, (g, ref) in enumerate(zip(numeric, fine, strict=True)):
        got = np.zeros_like(np.asarray(ref)) if g is None else np.asarray(g, dtype=float)
        scale = 1.0 + np.max(np.abs(ref), initial=0.0)
        if got.shape != np.shape(ref) or np.max(np.abs(got - ref), initial=0.0) > 1e-5 * scale:
            problems.append(f"gradient of argument {k}: {g!r}, finite differences {ref!r}")
    if problems:
        return pf.Outcome("wrong", problems[0].split(" ")[0] + " differ", as_program, "\n".join(problems))
    return pf.Outcome("right", "", as_program)
