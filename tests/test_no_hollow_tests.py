"""No hollow tests: every test function must be able to fail.

An AST check over tests/ (part of `make test`): a ``test_*`` function passes when it asserts
(an ``assert`` that is not a tautology, ``pytest.raises``/``warns``/``fail``, a Playwright
``expect``, a mock's ``assert_*``, an explicit ``raise``) directly or through a helper
function defined anywhere under tests/ that does (followed transitively by name). Flagged:
a test with none of those, and tautological assertions — a truthy constant, or a status
compared against every status there is (``status in ("answered", "insufficient", "failed")``).
The rare test whose whole claim is "this runs without raising" says so with
``@pytest.mark.must_not_raise`` (and a docstring saying why).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ASSERTING_CALLS = frozenset({"raises", "warns", "fail", "expect", "deprecated_call"})
ALL_STATUSES = frozenset({"answered", "insufficient", "failed"})
MARKER = "must_not_raise"

Functions = dict[str, tuple[bool, set[str]]]


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def tautology(node: ast.Assert) -> bool:
    """An assertion that cannot fail: a truthy constant, or membership in every status."""
    test = node.test
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In):
        box = test.comparators[0]
        if isinstance(box, ast.Tuple | ast.List | ast.Set):
            values = {e.value for e in box.elts if isinstance(e, ast.Constant)}
            return values >= ALL_STATUSES
    return False


def scan(func: ast.AST) -> tuple[bool, set[str], list[int]]:
    """(asserts directly, names of the functions it calls, lines of tautologies)."""
    asserts, calls, hollow = False, set(), []
    for node in ast.walk(func):
        if isinstance(node, ast.Assert):
            if tautology(node):
                hollow.append(node.lineno)
            else:
                asserts = True
        elif isinstance(node, ast.Raise):
            asserts = True
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            asserts |= name.startswith("assert") or name in ASSERTING_CALLS
            calls.add(name)
    return asserts, calls, hollow


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def helpers(trees: list[ast.AST]) -> Functions:
    """Every non-test function under tests/ by name: (asserts directly, calls)."""
    out: Functions = {}
    for tree in trees:
        for func in _functions(tree):
            if not func.name.startswith("test_"):
                asserts, calls, _ = scan(func)
                before = out.get(func.name, (False, set()))
                out[func.name] = (asserts or before[0], calls | before[1])
    return out


def _asserts_through(name: str, known: Functions, seen: set[str]) -> bool:
    if name in seen or name not in known:
        return False
    seen.add(name)
    asserts, calls = known[name]
    return asserts or any(_asserts_through(c, known, seen) for c in calls)


def findings(sources: dict[str, str]) -> list[str]:
    """``file:line name: why`` for each hollow test in `sources` (path → code)."""
    trees = {path: ast.parse(code) for path, code in sources.items()}
    known = helpers(list(trees.values()))
    found = []
    for path, tree in trees.items():
        for func in _functions(tree):
            if not func.name.startswith("test_"):
                continue
            if any(MARKER in ast.unparse(d) for d in func.decorator_list):
                continue
            asserts, calls, hollow = scan(func)
            found += [
                f"{path}:{line} {func.name}: an assertion that cannot fail" for line in hollow
            ]
            seen: set[str] = set()
            if not asserts and not any(_asserts_through(c, known, seen) for c in calls):
                found.append(f"{path}:{func.lineno} {func.name}: asserts nothing")
    return found


def test_no_test_under_tests_is_hollow() -> None:
    sources = {str(p.relative_to(TESTS)): p.read_text() for p in sorted(TESTS.rglob("*.py"))}
    assert len(sources) > 100  # the whole suite was read
    assert findings(sources) == []


def test_the_check_flags_what_it_should() -> None:
    code = """
import pytest

def check_shape(x):
    assert x.shape == (2, 2)

def via_helper(x):
    check_shape(x)

def test_nothing():
    compute()

def test_tautology(result):
    assert result.status in ("answered", "insufficient", "failed")
    assert True

def test_direct():
    assert compute() == 3

def test_raises():
    with pytest.raises(ValueError):
        compute()

def test_through_helpers(x):
    via_helper(x)

def test_mock(m):
    m.assert_called_once_with(1)

@pytest.mark.must_not_raise
def test_runs():
    compute()
"""
    assert findings({"t.py": code}) == [
        "t.py:10 test_nothing: asserts nothing",
        "t.py:14 test_tautology: an assertion that cannot fail",
        "t.py:15 test_tautology: an assertion that cannot fail",
        "t.py:13 test_tautology: asserts nothing",
    ]
