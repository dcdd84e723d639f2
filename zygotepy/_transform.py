"""Source rewriting, and nothing else: make every call, operator and subscript in a Python
function visible to whoever supplies the helpers.

A function's source is parsed once (from its file, so lambdas are found by position), its calls
``f(a)`` become ``_zp_call(f, a)``, ``a + b`` becomes ``_zp_call(_zp_op_add, a, b)``, ``x[i]``
becomes ``_zp_getitem(x, i)``, and the result is compiled with the original file name and line
numbers (tracebacks point at the user's code). The rewritten code takes the helpers
(:data:`HELPER_NAMES`) as free variables after the original's own; :mod:`zygotepy._runtime`
binds them to the engine. Results are cached per code object. Coroutines and functions
without source give ``None`` (with one warning).
"""

from __future__ import annotations

import ast
import dis
import inspect
import linecache
import operator
import os
import sys
import types
import weakref
from typing import Any

import rulescore
from zygotepy._caches import BoundedCache
from zygotepy._errors import LIBRARY_CALL, UntraceableError, warn_user

_OPERATORS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.MatMult: operator.matmul, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
}
_INPLACE = {ast.Add: operator.iadd, ast.Sub: operator.isub, ast.Mult: operator.imul,
            ast.Div: operator.itruediv, ast.FloorDiv: operator.ifloordiv, ast.Mod: operator.imod,
            ast.Pow: operator.ipow, ast.MatMult: operator.imatmul}
#: Comparisons with one operator go through ``_zp_compare``, which gives an array written
#: through a view or an alias its current value (identity and membership tests stay as they are).
_COMPARISONS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
                ast.Eq: operator.eq, ast.NotEq: operator.ne}
_LEFT_ALONE = frozenset({"super", "locals", "globals", "vars", "eval", "exec", "dir"})
#: Coroutines run outside the differentiation's control flow: they are called as they are.
_UNREWRITABLE_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


class ZygoteWarning(UserWarning):
    """A function could only be differentiated by operator overloading (no source)."""


#: The operators the rewritten code calls through ``_zp_call``, by the name it uses for each.
OPERATOR_HELPERS: dict[str, Any] = {f"_zp_op_{op.__name__}": op
                                    for op in [*_OPERATORS.values(), *_INPLACE.values(),
                                               *_COMPARISONS.values()]}
#: The free variables rewritten code expects besides the original's own: the engine's runtime
#: helpers (``_zp_call``, ``_zp_getitem``, ...), ``slice`` and the operators.
HELPER_NAMES: tuple[str, ...] = ("_zp_param", "_zp_attr", "_zp_locals", "_zp_call", "_zp_slice",
                                 "_zp_setitem", "_zp_store", "_zp_inplace", "_zp_getitem", "_zp_compare",
                                 "_zp_class_of", "_zp_setattr", "_zp_delattr", "_zp_iter", "_zp_with",
                                 "_zp_contains", "_zp_delitem", "_zp_escaping", "_zp_as_is",
                                 *OPERATOR_HELPERS)
#: The free variable through which a rewritten function reaches the function it was made from
#: (a weak reference, one per function: see :func:`_with_as_is_check`).
ORIGINAL = "_zp_original"


def _name(id_: str, like: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(id=id_, ctx=ast.Load()), like)


def _call(like: ast.AST, func: ast.expr, *args: ast.expr, helper: str = "_zp_call") -> ast.Call:
    return ast.copy_location(ast.Call(func=_name(helper, like), args=[func, *args], keywords=[]), like)


def _scope_nodes(body: list[ast.AST]) -> list[ast.AST]:
    """The nodes of one function scope (nested functions, classes and lambdas not entered)."""
    out, stack = [], list(body)
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _local_names(func: ast.AST) -> set[str]:
    """Names local to a function: stores into them may be rebound (functional updates)."""
    args: ast.arguments = func.args  # type: ignore[attr-defined]
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared: set[str] = set()
    body = func.body if isinstance(func.body, list) else [func.body]  # type: ignore[attr-defined]
    for node in _scope_nodes(body):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names - declared


#: Builtins that run text as code, which stores where the engine does not see.
_RUNNING_TEXT = frozenset({"exec", "eval"})
#: Nested scopes whose functions may outlive the call that makes them, holding its locals' cells
#: (a comprehension's function is called once, where it is made).
_CLOSURES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _lets_values_escape(func: ast.AST, local: set[str]) -> bool:
    """Whether a function may put a value where other code reaches it without a store the
    engine sees: a ``global`` or ``nonlocal`` name, ``exec`` or ``eval``, or a closure over its
    locals (a nested function or class), whose cells outlive the call.

    Example:
        >>> tree = ast.parse("def f(x):\\n    return lambda: x")
        >>> _lets_values_escape(tree.body[0], {"x"}), _lets_values_escape(tree.body[0].body[0].value, set())
        (True, False)
    """
    body = func.body if isinstance(func.body, list) else [func.body]  # type: ignore[attr-defined]
    for node in _scope_nodes(body):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _RUNNING_TEXT:
            return True
        if isinstance(node, _CLOSURES) and any(
                isinstance(n, ast.Name) and n.id in local for n in ast.walk(node)):
            return True
    return False


class _Rewriter(ast.NodeTransformer):
    """Routes calls, operators, subscripts and the protocols Python runs implicitly (attribute
    reads, writes and deletes, iteration, ``with``, ``in``) to the engine's helpers, so that a
    property, an ``__iter__`` or an ``__enter__`` written in Python runs rewritten too; with
    ``params``, the objects of attribute loads, iterations and unpackings also pass through
    ``param`` (implicit parameters are arrays the code may reach without any call).

    ``modules``: global names bound to modules when the function was rewritten; their attributes
    (``np.sum``) are read as they are. ``names``: every global name then (a builtin not among
    them is the builtin). Without ``protocols`` (rulescore's own code, whose rule bodies outer
    levels trace line by line and which runs no user protocol) only calls, operators and
    subscripts are routed."""

    def __init__(self, params: bool, modules: frozenset[str] = frozenset(), cls: str | None = None,
                 names: frozenset[str] = frozenset(), protocols: bool = True) -> None:
        self.scopes: list[set[str]] = []
        self.params = params
        self.modules = modules
        self.names = names
        self.protocols = protocols
        self.classes = [cls]  # the class whose private names (``self.__x``) are mangled here
        self.temporaries = 0

    def _attr_name(self, attr: str) -> ast.Constant:
        """The attribute name as Python looks it up: ``__x`` in a class body is ``_Class__x``."""
        owner = self.classes[-1]
        if owner is not None and attr.startswith("__") and not attr.endswith("__") and owner.strip("_"):
            attr = f"_{owner.lstrip('_')}{attr}"
        return ast.Constant(attr)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()
        return node

    def _param(self, node: ast.expr) -> ast.expr:
        if not self.params:
            return node
        return ast.copy_location(ast.Call(func=_name("_zp_param", node), args=[node], keywords=[]), node)

    def _helper(self, helper: str, node: ast.AST, *args: ast.expr) -> ast.Call:
        return ast.copy_location(ast.Call(func=_name(helper, node), args=list(args), keywords=[]), node)

    def _is_module(self, value: ast.expr) -> bool:
        return isinstance(value, ast.Name) and value.id in self.modules and not any(
            value.id in scope for scope in self.scopes)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or (self._is_module(node.value) and not self.params) or (
                not self.protocols and not self.params):
            return node
        # obj.name -> _zp_attr(obj, "name"): properties, cached properties and __getattr__ run
        # rewritten on any object (and a parameter's box is found)
        return self._helper("_zp_attr", node, node.value, self._attr_name(node.attr))

    def _builtin_call(self, node: ast.expr, names: frozenset[str]) -> bool:
        """Whether ``node`` (already rewritten) calls one of the builtins ``names``, not shadowed."""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_zp_call"
                and bool(node.args) and isinstance(node.args[0], ast.Name) and node.args[0].id in names
                and node.args[0].id not in self.names and not any(node.args[0].id in s for s in self.scopes))

    def _iterated(self, node: ast.expr) -> ast.expr:
        if not self.protocols or isinstance(node, _LITERALS) or self._builtin_call(node, _ITERATORS):
            return self._param(node)  # nothing of the user's runs to iterate it
        return self._helper("_zp_iter", node, node)

    def visit_With(self, node: ast.With) -> ast.AST:
        self.generic_visit(node)
        if not self.protocols:
            return node
        for item in node.items:  # __enter__/__exit__ written in Python run rewritten
            item.context_expr = self._helper("_zp_with", item.context_expr, item.context_expr)
        return node

    def visit_Delete(self, node: ast.Delete) -> Any:
        self.generic_visit(node)
        if not self.protocols:
            return node
        out: list[ast.stmt] = []
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                call = self._helper("_zp_delattr", target, target.value, self._attr_name(target.attr))
            elif isinstance(target, ast.Subscript):
                call = self._helper("_zp_delitem", target, target.value, _index_expr(target.slice))
            else:
                out.append(ast.copy_location(ast.Delete(targets=[target]), node))
                continue
            out.append(ast.copy_location(ast.Expr(value=call), node))
        return out

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        node.iter = self._iterated(node.iter)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.iter = self._iterated(node.iter)
        return node

    def _visit_scope(self, node: ast.AST) -> ast.AST:
        local = _local_names(node)
        escapes = self.protocols and _lets_values_escape(node, local)
        self.scopes.append(local)
        self.generic_visit(node)
        self.scopes.pop()
        if escapes:  # noted as the function starts (a lambda: as it returns, before its value is used)
            if isinstance(node, ast.Lambda):
                node.body = self._helper("_zp_escaping", node.body, node.body)
            else:
                node.body.insert(0, ast.copy_location(  # type: ignore[attr-defined]
                    ast.Expr(value=self._helper("_zp_escaping", node)), node.body[0]))  # type: ignore[attr-defined]
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_scope

    def _local(self, name: str) -> bool:
        return bool(self.scopes) and name in self.scopes[-1]

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in _LEFT_ALONE:
            if node.func.id in ("locals", "vars") and not node.args and not node.keywords:
                # the helpers are free variables of the rewritten code: hide them from locals()
                hidden = ast.Call(func=_name("_zp_locals", node), args=[node], keywords=[])
                return ast.copy_location(hidden, node)
            return node
        if (isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) == 1
                and not isinstance(node.args[0], ast.Starred) and not node.keywords):
            return _call(node, node.func, *node.args, helper="_zp_class_of")  # ``type(x)``: hot
        return ast.copy_location(
            ast.Call(func=_name("_zp_call", node), args=[node.func, *node.args], keywords=node.keywords),
            node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        op = _OPERATORS[type(node.op)]
        return _call(node, _name(f"_zp_op_{op.__name__}", node), node.left, node.right)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if (len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) and self.protocols
                and not isinstance(node.comparators[0], _LITERALS)):
            found = self._helper("_zp_contains", node, node.comparators[0], node.left)
            if isinstance(node.ops[0], ast.NotIn):
                return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=found), node)
            return found
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARISONS:
            return node
        op = _COMPARISONS[type(node.ops[0])]
        return ast.copy_location(ast.Call(func=_name("_zp_compare", node), args=[
            _name(f"_zp_op_{op.__name__}", node), node.left, node.comparators[0]], keywords=[]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) or (isinstance(node.operand, ast.Constant) and isinstance(
                node.operand.value, (int, float, complex))):
            return node  # a literal such as -1: nothing traced to see
        op = _OPERATORS[type(node.op)]
        return _call(node, _name(f"_zp_op_{op.__name__}", node), node.operand)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(ast.Call(func=_name("_zp_getitem", node),
                                          args=[node.value, _index_expr(node.slice)], keywords=[]), node)

    def _temporary(self) -> str:
        self.temporaries += 1
        return f"_zp_t{self.temporaries}"

    def _split_assign(self, node: ast.Assign) -> list[ast.AST]:
        """``a[0], a[1] = v`` and ``a[0] = b[1] = v``: one store per target, through temporaries."""
        tmp = self._temporary()
        stmts: list[ast.stmt] = [ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=node.value)]
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                names = [self._temporary() for _ in target.elts]
                unpack = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store())
                stmts.append(ast.Assign(targets=[unpack], value=_name(tmp, node)))
                stmts += [ast.Assign(targets=[elt], value=_name(n, node))
                          for elt, n in zip(target.elts, names, strict=True)]
            else:
                stmts.append(ast.Assign(targets=[target], value=_name(tmp, node)))
        out: list[ast.AST] = []
        for stmt in stmts:
            ast.copy_location(stmt, node)
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out

    def visit_Assign(self, node: ast.Assign) -> Any:
        target = node.targets[0]
        if (len(node.targets) > 1 or isinstance(target, (ast.Tuple, ast.List))) and any(
                _stores_into_item(t) for t in node.targets) and not any(
                isinstance(n, ast.Starred) for t in node.targets for n in ast.walk(t)):
            return self._split_assign(node)
        if len(node.targets) == 1 and isinstance(target, ast.Attribute) and self.protocols:
            # o.a = v -> setattr(o, "a", v): a property's setter or a __setattr__ runs rewritten
            value, owner = self.visit(node.value), self.visit(target.value)
            stored = self._helper("_zp_setattr", node, owner, self._attr_name(target.attr), value)
            return ast.copy_location(ast.Expr(value=stored), node)
        if len(node.targets) == 1 and isinstance(target, ast.Subscript):
            value = self.visit(node.value)
            container = self.visit(target.value)
            index = _index_expr(self.visit(target.slice))
            if isinstance(target.value, ast.Name) and self._local(target.value.id):
                # x[i] = v  ->  x = setitem(x, i, v)
                new = ast.Call(func=_name("_zp_setitem", node), args=[container, index, value], keywords=[])
                return ast.copy_location(
                    ast.Assign(targets=[ast.Name(id=target.value.id, ctx=ast.Store())],
                               value=ast.copy_location(new, node)), node)
            new = ast.Call(func=_name("_zp_store", node), args=[container, index, value], keywords=[])
            return ast.copy_location(ast.Expr(value=ast.copy_location(new, node)), node)
        self.generic_visit(node)
        if isinstance(target, (ast.Tuple, ast.List)):  # a, b = obj iterates obj (rows of a parameter)
            node.value = self._iterated(node.value)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        target = node.target
        if type(node.op) not in _INPLACE:
            self.generic_visit(node)
            return node
        op, iop = _OPERATORS[type(node.op)], _INPLACE[type(node.op)]

        def update(current: ast.expr, target_kind: str = "") -> ast.Call:
            return ast.copy_location(ast.Call(
                func=_name("_zp_inplace", node),
                args=[_name(f"_zp_op_{op.__name__}", node), _name(f"_zp_op_{iop.__name__}", node),
                      current, self.visit(node.value), ast.Constant(target_kind)], keywords=[]), node)

        def assign(name: str, value: ast.expr) -> ast.Assign:
            stored = ast.Name(id=name, ctx=ast.Store())
            return ast.copy_location(ast.Assign(targets=[stored], value=value), node)

        if isinstance(target, ast.Name) and self._local(target.id):  # x += v -> x = inplace(x, v)
            return assign(target.id, update(_name(target.id, node), "name"))
        if isinstance(target, ast.Subscript):  # x[i] += v -> c = x; t = i; c[t] = inplace(c[t], v)
            local = isinstance(target.value, ast.Name) and self._local(target.value.id)
            container = target.value.id if local else self._temporary()  # type: ignore[attr-defined]
            index = self._temporary()  # the container and index are evaluated once, as Python does
            binds = [] if local else [assign(container, self.visit(target.value))]
            binds.append(assign(index, _index_expr(self.visit(target.slice))))
            read = ast.copy_location(ast.Subscript(value=_name(container, node),
                                                   slice=_name(index, node), ctx=ast.Load()), node)
            write = ast.copy_location(ast.Subscript(value=_name(container, node),
                                                    slice=_name(index, node), ctx=ast.Store()), node)
            store = ast.copy_location(ast.Assign(targets=[write], value=update(self.visit(read))), node)
            return [*binds, self.visit_Assign(store)]  # type: ignore[return-value]
        if isinstance(target, ast.Attribute):  # o.a += v -> t = o; t.a = inplace(t.a, v)
            obj = self._temporary()
            read = self.visit(ast.copy_location(
                ast.Attribute(value=_name(obj, node), attr=target.attr, ctx=ast.Load()), node))
            into: ast.stmt
            if not self.protocols:
                into = ast.Assign(targets=[ast.copy_location(ast.Attribute(
                    value=_name(obj, node), attr=target.attr, ctx=ast.Store()), node)],
                    value=update(read, "attribute"))
            else:
                into = ast.Expr(value=self._helper("_zp_setattr", node, _name(obj, node),
                                                   self._attr_name(target.attr), update(read, "attribute")))
            return [assign(obj, self.visit(target.value)),  # type: ignore[return-value]
                    ast.copy_location(into, node)]
        self.generic_visit(node)
        return node


#: Literal containers: iterating or searching them runs none of the user's code.
_LITERALS = (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Constant, ast.JoinedStr)
#: Builtins whose results iterate without user code (their arguments went through the dispatcher).
_ITERATORS = frozenset({"range", "enumerate", "zip", "reversed", "sorted", "map", "filter", "list", "tuple"})


def _stores_into_item(target: ast.AST) -> bool:
    """Whether an assignment target stores into a subscript or an attribute (then a tuple target
    is split into one store per element, each through its helper)."""
    if isinstance(target, (ast.Subscript, ast.Attribute)):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and any(_stores_into_item(e) for e in target.elts)


def _index_expr(index: ast.expr) -> ast.expr:
    if isinstance(index, ast.Slice):
        parts = [p if p is not None else ast.Constant(None) for p in (index.lower, index.upper, index.step)]
        return ast.copy_location(ast.Call(func=_name("_zp_slice", index), args=parts, keywords=[]), index)
    if isinstance(index, ast.Tuple):
        return ast.copy_location(ast.Tuple(elts=[_index_expr(e) for e in index.elts], ctx=ast.Load()), index)
    return index


# -- finding a function's node in its file -------------------------------------------------------
#: filename -> (its text when parsed, its functions by first line); keyed on the whole text, so
#: an edited file (``importlib.reload``) is parsed again.
_FILES = BoundedCache(256)


def _file_index(filename: str, module_globals: Any) -> dict[int, list[tuple[ast.AST, str | None]]] | None:
    linecache.checkcache(filename)  # the file may have been edited since it was first read
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        return None
    return _text_index(filename, "".join(lines))


def _text_index(filename: str, text: str) -> dict[int, list[tuple[ast.AST, str | None]]] | None:
    """The functions and lambdas of a source text by first line (cached per file and text)."""
    cached = _FILES.get(filename)
    if cached is not None and cached[0] == text:
        return cached[1]  # type: ignore[no-any-return]
    try:
        tree = ast.parse(text, filename)
    except SyntaxError:
        return None
    index: dict[int, list[tuple[ast.AST, str | None]]] = {}

    def walk(node: ast.AST, cls: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                first = min([d.lineno for d in getattr(child, "decorator_list", [])] + [child.lineno])
                index.setdefault(first, []).append((child, cls))
                if first != child.lineno:
                    index.setdefault(child.lineno, []).append((child, cls))
            walk(child, child.name if isinstance(child, ast.ClassDef) else cls)

    walk(tree, None)
    _FILES.put(filename, (text, index))
    return index


def typed_sources(filename: str) -> list[str]:
    """Texts that may hold the source of code compiled from ``filename`` when no file holds it:
    ``python -c``'s argument (``<string>``), and the statements typed into the plain REPL
    (``<stdin>``), most recent first, from readline's history. Each is checked against the code
    object before it is used (:func:`_find_node`), so a wrong guess is never rewritten.

    Example:
        >>> typed_sources("not typed")
        []
    """
    if filename == "<string>":
        argv = list(getattr(sys, "orig_argv", ()))
        if "-c" in argv[:-1]:
            return [argv[argv.index("-c") + 1]]
        return []
    if filename != "<stdin>":
        return []
    readline = sys.modules.get("readline")
    if readline is None:
        return []
    lines = [readline.get_history_item(i) or "" for i in range(1, readline.get_current_history_length() + 1)]
    statements = []
    for first in reversed(range(len(lines))):
        if not lines[first] or lines[first][0].isspace():
            continue  # a statement begins at an unindented line
        block = [lines[first]]
        for line in lines[first + 1:]:
            if line and not line[0].isspace() and not line.startswith(_CONTINUATIONS):
                break
            block.append(line)
        statements.append("\n".join(block) + "\n")
    return statements


#: Unindented lines that continue a compound statement typed into the REPL.
_CONTINUATIONS = ("else", "elif", "except", "finally", ")", "]", "}")


def _find_node(fn: types.FunctionType) -> tuple[ast.AST, str | None] | None:
    """``fn``'s syntax tree and the class it is defined in, from its file or from the text it was
    typed as (:func:`typed_sources`), checked to compile to ``fn``'s own code; ``None`` if no
    source is found; :data:`STALE` if the source found is not the code being run (its file was
    edited after it was imported)."""
    code = fn.__code__
    index = _file_index(code.co_filename, fn.__globals__)
    texts = typed_sources(code.co_filename) if index is None else []
    indexes = [index] if index is not None else [_text_index(code.co_filename, t) for t in texts]
    stale = False
    sources = [_FILES.get(code.co_filename)[0]] if index is not None else texts  # type: ignore[index]
    for found_index, text in zip(indexes, sources, strict=True):
        if found_index is None:
            continue
        nodes = _nodes_at(fn, found_index)
        if not nodes:
            continue
        if _compiles_to(text, code, _import_rewrite(fn)):
            return nodes[0]
        stale = True
    return STALE if stale and index is not None else None


#: What :func:`_find_node` returns for a function whose file no longer holds its code.
STALE: Any = (None, None)


def _nodes_at(fn: types.FunctionType,
              index: dict[int, list[tuple[ast.AST, str | None]]]) -> list[tuple[ast.AST, str | None]]:
    """The nodes in ``index`` that may be ``fn``'s, the likeliest first."""
    code = fn.__code__
    candidates = index.get(code.co_firstlineno, [])
    if code.co_name == "<lambda>":
        lambdas = [(n, c) for n, c in candidates if isinstance(n, ast.Lambda)]
        spots = [(ln, col) for ln, _, col, end in code.co_positions()
                 if ln is not None and col is not None and (col, end) != (0, 0)]

        def covers(node: Any) -> bool:
            start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
            return all(start <= s <= end for s in spots)

        nests = any(isinstance(c, types.CodeType) and c.co_name == "<lambda>" for c in code.co_consts)

        def same_signature(node: Any) -> bool:  # curried lambdas share a line: tell them apart
            params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
            inner = any(isinstance(n, ast.Lambda) for n in ast.walk(node.body))
            return params == list(code.co_varnames[:code.co_argcount]) and inner == nests

        fitting = [(n, c) for n, c in lambdas if covers(n) and same_signature(n)]
        fitting.sort(key=lambda nc: ((nc[0].end_lineno or 0) - nc[0].lineno,
                                     (nc[0].end_col_offset or 0) - nc[0].col_offset))
        return list(fitting)
    return [(n, c) for n, c in candidates if getattr(n, "name", None) == code.co_name]


def _import_rewrite(fn: types.FunctionType) -> Any:
    """The syntax-tree rewrite an import hook applied to ``fn``'s module, which the check of its
    source must apply too (pytest rewrites the ``assert`` statements of test modules), or ``None``."""
    loader = fn.__globals__.get("__loader__")
    if type(loader).__module__ != "_pytest.assertion.rewrite":
        return None
    rewrite_asserts = sys.modules["_pytest.assertion.rewrite"].rewrite_asserts
    config = getattr(loader, "config", None)
    filename = fn.__code__.co_filename
    return lambda module, text: rewrite_asserts(module, text.encode(), filename, config)


#: (file name, text, import rewrite or not) -> the text compiled as Python compiles it; bounded.
_COMPILED = BoundedCache(64)


def _compiles_to(text: str, code: types.CodeType, rewrite: Any = None) -> bool:
    """Whether ``text`` (a file's source, or what was typed), compiled as its import compiled it,
    holds ``code`` (same name, first line and bytecode): the text found is the code being run,
    not a file edited since."""
    key = (code.co_filename, text, rewrite is not None)
    compiled = _COMPILED.get(key)
    if compiled is None:
        try:
            tree = ast.parse(text, code.co_filename)
            if rewrite is not None:
                rewrite(tree, text)
            compiled = compile(tree, code.co_filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, TypeError):
            compiled = False
        _COMPILED.put(key, compiled)
    if not isinstance(compiled, types.CodeType):
        return False
    stack: list[types.CodeType] = [compiled]
    while stack:
        c = stack.pop()
        if c.co_name == code.co_name and c.co_firstlineno == code.co_firstlineno and _same_code(c, code):
            return True
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return False


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    if a.co_code != b.co_code or a.co_names != b.co_names or a.co_varnames != b.co_varnames:
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts, strict=True):
        if isinstance(x, types.CodeType):
            if not (isinstance(y, types.CodeType) and _same_code(x, y)):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True


# -- compiling the rewritten function -------------------------------------------------------------
#: Per code object (held weakly: a reloaded module's old code is freed), its rewritten code, or
#: None; one table without and one with implicit parameters.
_BY_CODE = (weakref.WeakKeyDictionary[types.CodeType, Any](),
            weakref.WeakKeyDictionary[types.CodeType, Any]())
_GENERATED: weakref.WeakSet[types.CodeType] = weakref.WeakSet()
_WARNED: weakref.WeakSet[types.CodeType] = weakref.WeakSet()


def rewritten(fn: types.FunctionType, params: bool, as_is: bool = False) -> types.CodeType | None:
    """``fn``'s rewritten code (cached per code object), or ``None`` if it cannot be rewritten;
    with ``params``, the variant that also passes attribute loads, iterations and unpackings
    through ``_zp_param`` (implicit parameters reached without a call); with ``as_is`` (decided by
    the code's file, so the same for every call of one code), beginning with the check that runs
    the original function when the call reaches no traced value (:func:`_with_as_is_check`)."""
    cache = _BY_CODE[params]
    code = fn.__code__
    try:
        return cache[code]  # type: ignore[no-any-return]
    except KeyError:
        new = cache[code] = _rewrite(fn, params, as_is)
        return new


def rewritten_source(fn: types.FunctionType, params: bool = False) -> str | None:
    """The source text of ``fn`` as the engine rewrites it (what :func:`rewritten` compiles, before
    it is wrapped to receive the helpers), or ``None`` when ``fn`` has no source to rewrite.

    Example:
        >>> def f(x):
        ...     return x * 2
        >>> print(rewritten_source(f))
        def f(x):
            return _zp_call(_zp_op_mul, x, 2)
    """
    found = _find_node(fn)
    if found is None or found is STALE:
        return None
    modules = frozenset(k for k, v in fn.__globals__.items() if type(v) is types.ModuleType)
    protocols = not fn.__code__.co_filename.startswith(_RULESCORE_DIR)
    rewriter = _Rewriter(params, modules, found[1], frozenset(fn.__globals__), protocols)
    return ast.unparse(rewriter.visit(_copy(found[0])))


#: rulescore's own code: rewritten with calls, operators and subscripts routed, not protocols.
_RULESCORE_DIR = os.path.dirname(os.path.abspath(rulescore.__file__ or "")) + os.sep


_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"})
_ATTRIBUTES = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def callees(fn: types.FunctionType) -> list[Any]:
    """What ``fn``'s bytecode (nested code included) loads by name, and the attributes it reads
    off those (``np.linalg.norm``): the callables it may call without the dispatcher seeing them
    when it cannot be rewritten. Names that do not resolve are left out.

    Example:
        >>> import math
        >>> def f(x):
        ...     return math.sin(x) + abs(x)
        >>> callees(f) == [math, math.sin, abs]
        True
    """
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
    builtins = fn.__globals__.get("__builtins__", {})
    builtins = vars(builtins) if isinstance(builtins, types.ModuleType) else builtins
    found: list[Any] = []
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        current: Any = _MISSING
        for instruction in dis.get_instructions(code):
            name = instruction.argval
            if instruction.opname in _LOADS:
                cell = cells.get(name)
                try:
                    current = cell.cell_contents if cell is not None else fn.__globals__.get(
                        name, builtins.get(name, _MISSING))
                except ValueError:  # an empty cell
                    current = _MISSING
            elif instruction.opname in _ATTRIBUTES and current is not _MISSING:
                current = getattr(current, name, _MISSING)
            else:
                current = _MISSING
                continue
            if current is not _MISSING and all(current is not f for f in found):
                found.append(current)
    return found


_MISSING: Any = object()


def is_generated(code: types.CodeType) -> bool:
    """Whether ``code`` was made by :func:`rewritten` (it is never rewritten again)."""
    return code in _GENERATED


def _rewrite(fn: types.FunctionType, params: bool, as_is: bool) -> types.CodeType | None:
    code = fn.__code__
    if code.co_flags & _UNREWRITABLE_FLAGS:
        _warn_no_source(fn, "not rewritten (a coroutine)")
        return None
    found = _find_node(fn)
    if found is None:
        _warn_no_source(fn)
        return None
    if found is STALE:
        raise UntraceableError(
            f"the source of {code.co_qualname} in {code.co_filename} is not the code being run: the file "
            "was edited after it was imported. Reload the module (importlib.reload) or restart Python, "
            "so that what zygotepy differentiates is what the function computes")
    node, cls = found
    modules = frozenset(k for k, v in fn.__globals__.items() if type(v) is types.ModuleType)
    protocols = not code.co_filename.startswith(_RULESCORE_DIR)
    node = _Rewriter(params, modules, cls, frozenset(fn.__globals__), protocols).visit(_copy(node))
    if as_is and protocols and not params and not any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _scope_nodes(_body(node))):
        _with_as_is_check(node)
    if isinstance(node, ast.Lambda):
        body: list[ast.stmt] = [ast.copy_location(ast.Return(value=node.body), node.body)]
        func: Any = ast.FunctionDef(name="_zp_fn", args=node.args, body=body, decorator_list=[],
                                        returns=None, type_comment=None)
    else:
        func = node
        func.decorator_list = []
        func.name = "_zp_fn"  # its own name must stay a global
    ast.copy_location(func, node)
    placeholders = [*HELPER_NAMES, ORIGINAL, *_numbered_sites(func), *code.co_freevars]
    factory = ast.FunctionDef(
        name="_zp_factory", args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                kw_defaults=[], kwarg=None, defaults=[]),
        body=[ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store()) for n in placeholders],
                         value=ast.Constant(None)), func,
              ast.Return(value=ast.Name(id=func.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    outer: ast.stmt = factory
    if cls is not None:  # compile inside a class of the same name: private names mangle alike
        outer = ast.ClassDef(name=cls, bases=[], keywords=[], body=[factory], decorator_list=[])
    module = ast.Module(body=[outer], type_ignores=[])
    ast.copy_location(outer, node)
    ast.fix_missing_locations(module)  # the factory's own nodes take the function's position
    try:
        compiled = compile(module, code.co_filename, "exec")
    except (SyntaxError, ValueError, TypeError) as err:
        warn_user(f"zygotepy could not rewrite {code.co_qualname}: {err}", ZygoteWarning)
        return None
    new = _find_code(compiled, func.name)
    if new is None:
        return None
    new = _renamed(new, new.co_qualname, code.co_qualname).replace(co_name=code.co_name)
    _collect_generated(new)
    return new


#: The prefix of a call site's own helper: rewritten code calls ``_zp_site_<k>(f, *args)`` where the
#: rewriter wrote ``_zp_call(f, *args)``, ``k`` numbering the sites of a function (its nested
#: functions and lambdas included); :func:`zygotepy._runtime.call_site` makes each one.
SITE_PREFIX = "_zp_site_"


def _numbered_sites(func: ast.AST) -> list[str]:
    """Give each ``_zp_call(...)`` in ``func`` its own name (``SITE_PREFIX`` and a number), so
    each call site keeps what the dispatcher answered there; the names, in order."""
    names: list[str] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_zp_call":
            node.func.id = f"{SITE_PREFIX}{len(names)}"
            names.append(node.func.id)
    return names


def _body(node: Any) -> list[Any]:
    return node.body if isinstance(node.body, list) else [node.body]


def _with_as_is_check(func: Any) -> None:
    """Begin ``func`` (a rewritten function or lambda) with ``if _zp_as_is(<its arguments>): return
    _zp_original()(<its arguments>)``: a call that reaches no traced value runs the original
    function (zygotepy._runtime.as_is), with no frame added to a traced call (recursion keeps
    its depth). Not for a generator, whose ``return`` would end it empty."""
    def forwarded(callee: ast.expr) -> ast.Call:  # callee(<func's arguments>)
        parameters = func.args
        positional: list[ast.expr] = [_name(a.arg, func) for a in (*parameters.posonlyargs, *parameters.args)]
        if parameters.vararg is not None:
            positional.append(ast.Starred(value=_name(parameters.vararg.arg, func), ctx=ast.Load()))
        keywords = [ast.keyword(arg=a.arg, value=_name(a.arg, func)) for a in parameters.kwonlyargs]
        if parameters.kwarg is not None:
            keywords.append(ast.keyword(arg=None, value=_name(parameters.kwarg.arg, func)))
        return ast.Call(func=callee, args=positional, keywords=keywords)

    check = forwarded(_name("_zp_as_is", func))
    original = forwarded(ast.Call(func=_name(ORIGINAL, func), args=[], keywords=[]))
    if isinstance(func, ast.Lambda):
        func.body = ast.IfExp(test=check, body=original, orelse=func.body)
    else:
        func.body.insert(0, ast.If(test=check, body=[ast.Return(value=original)], orelse=[]))
    for node in ast.walk(func):
        if isinstance(node, (ast.expr, ast.stmt, ast.keyword)) and not hasattr(node, "lineno"):
            ast.copy_location(node, func)


_LOCATIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _copy(node: Any) -> Any:
    """A copy of a syntax tree (the rewriter edits in place; the cached file tree must not
    change). Field by field: several times faster than ``copy.deepcopy``."""
    if isinstance(node, ast.AST):
        new = type(node)(**{name: _copy(getattr(node, name)) for name in node._fields if hasattr(node, name)})
        for attr in _LOCATIONS:
            if hasattr(node, attr):
                setattr(new, attr, getattr(node, attr))
        return new
    if isinstance(node, list):
        return [_copy(v) for v in node]
    return node


def _find_code(code: types.CodeType, name: str) -> types.CodeType | None:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name:
                return const
            found = _find_code(const, name)
            if found is not None:
                return found
    return None


def _renamed(code: types.CodeType, old: str, new: str) -> types.CodeType:
    """``code`` and the code nested in it with the qualified-name prefix ``old`` (the rewriter's
    factory) read as ``new`` (the user's function): errors name ``loss.<locals>.<lambda>``."""
    consts = tuple(_renamed(c, old, new) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    qualname = new + code.co_qualname[len(old):] if code.co_qualname.startswith(old) else code.co_qualname
    return code.replace(co_consts=consts, co_qualname=qualname)


def _collect_generated(code: types.CodeType) -> None:
    _GENERATED.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _collect_generated(const)


def _warn_no_source(fn: types.FunctionType, why: str = "no source") -> None:
    code = fn.__code__
    if code in _WARNED or (code.co_name.startswith("__") and code.co_name.endswith("__")):
        return  # generated dunders (dataclasses, namedtuples) only assign: nothing to see
    if LIBRARY_CALL.get() is not None:
        return  # a library's generated helper (SciPy's ``_parse_args``): not the user's to fix
    _WARNED.add(code)
    warn_user(
        f"zygotepy: {why} for {code.co_qualname} ({code.co_filename}); it is differentiated by "
        "operator overloading only, so rules registered for functions it calls (and implicit "
        "parameters it reads) are not seen", ZygoteWarning)


