"""A generated Python repository with three merged PRs: one good, one whose gold patch leaves its tests failing,
one whose new test is not idempotent (passes once, fails when run again in the same environment)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

CORE = '''"""Small arithmetic helpers."""


def add(a, b):
    return a + b


def subtract(a, b):
    return a - b
'''

TEST_CORE = """import calc.core


def test_add():
    assert calc.core.add(2, 3) == 5


def test_subtract():
    assert calc.core.subtract(5, 3) == 2
"""

GOOD_IMPL = '''

def multiply(a, b):
    """Product of two numbers."""
    result = 0
    negative = b < 0
    for _ in range(abs(b)):
        result += a
    return -result if negative else result


def divide(a, b):
    """Integer division that refuses a zero divisor."""
    if b == 0:
        raise ZeroDivisionError("cannot divide by zero")
    quotient = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        quotient = -quotient
    return quotient


def clamp(value, low, high):
    """Limit value to the closed range [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    return max(low, min(high, value))
'''

GOOD_TESTS = """

def test_multiply():
    assert calc.core.multiply(3, 4) == 12
    assert calc.core.multiply(3, -2) == -6


def test_divide():
    assert calc.core.divide(7, 2) == 3
    assert calc.core.divide(-7, 2) == -3


def test_clamp():
    assert calc.core.clamp(15, 0, 10) == 10
"""

BAD_IMPL = '''

def power(base, exponent):
    """base raised to a non-negative integer exponent."""
    if exponent < 0:
        raise ValueError("negative exponents are not supported")
    result = 1
    # Off by one: multiplies exponent - 1 times.
    for _ in range(exponent - 1):
        result *= base
    return result


def square(value):
    """value squared."""
    return power(value, 2)


def cube(value):
    """value cubed."""
    return power(value, 3)
'''

BAD_TESTS = """import calc.core


def test_power():
    assert calc.core.power(2, 10) == 1024


def test_square():
    assert calc.core.square(4) == 16
"""

FLAKY_IMPL = '''

_cache = {}


def cached_total(values):
    """Sum of values, remembered per distinct input."""
    key = tuple(values)
    if key not in _cache:
        total = 0
        for value in values:
            total += value
        _cache[key] = total
    return _cache[key]


def cache_size():
    """How many distinct inputs are remembered."""
    return len(_cache)


def cache_clear():
    """Forget every remembered total."""
    _cache.clear()
'''

FLAKY_TESTS = """import os
import tempfile

import calc.core


def test_cached_total():
    assert calc.core.cached_total([1, 2, 3]) == 6


def test_cache_warms_once():
    # Leaves a marker behind: passes in a fresh environment, fails whenever it runs again in the same one.
    marker = os.path.join(tempfile.gettempdir(), "calc-cache-warmed")
    assert calc.core.cached_total([4, 5]) == 9
    assert not os.path.exists(marker), "cache was already warmed by an earlier run"
    open(marker, "w").close()
"""


@dataclass(frozen=True)
class GeneratedPR:
    number: int
    title: str
    body: str
    base_sha: str
    head_sha: str


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(repo),
    }
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def make_calc_repo(root: Path) -> tuple[Path, dict[str, GeneratedPR]]:
    """The repository and its PRs by kind: "good", "bad_gold", "flaky" (each branches off the same base)."""
    repo = root / "calc"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    base = _commit(
        repo,
        {"calc/__init__.py": "", "calc/core.py": CORE, "tests/test_core.py": TEST_CORE, "README.md": "# calc\n"},
        "calc: add and subtract",
    )
    prs: dict[str, GeneratedPR] = {}
    specs = {
        "good": (
            1,
            "Add multiply, divide and clamp",
            "We need `multiply(a, b)`, `divide(a, b)` (integer division rounding toward zero, ZeroDivisionError on 0) "
            "and `clamp(value, low, high)` in `calc.core`.",
            {"calc/core.py": CORE + GOOD_IMPL, "tests/test_core.py": TEST_CORE + GOOD_TESTS},
        ),
        "bad_gold": (
            2,
            "Add power, square and cube",
            "`calc.core.power(base, exponent)` for non-negative integer exponents, plus `square` and `cube`.",
            {"calc/core.py": CORE + BAD_IMPL, "tests/test_power.py": BAD_TESTS},
        ),
        "flaky": (
            3,
            "Cache totals",
            "`calc.core.cached_total(values)` sums values and remembers each distinct input; "
            "`cache_size()` and `cache_clear()` manage it.",
            {"calc/core.py": CORE + FLAKY_IMPL, "tests/test_cache.py": FLAKY_TESTS},
        ),
    }
    for kind, (number, title, body, files) in specs.items():
        _git(repo, "checkout", "-q", "-b", f"pr-{number}", base)
        head = _commit(repo, files, title)
        prs[kind] = GeneratedPR(number, title, body, base, head)
    _git(repo, "checkout", "-q", "main")
    return repo, prs


REMOVAL_INIT_BASE = "from calc.core import add, subtract\n"
REMOVAL_INIT_HEAD = "from calc.core import add, mean, subtract\n"
LEGACY = '''"""Old helpers, kept while callers move to calc.core."""


def mean(values):
    return sum(values) / len(values)
'''
MEAN_IMPL = '''

def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    values = list(values)
    if not values:
        raise ValueError("mean of an empty sequence")
    return sum(values) / len(values)
'''
REMOVAL_TESTS_BASE = """import calc


def test_add():
    assert calc.add(2, 3) == 5


def test_subtract():
    assert calc.subtract(5, 3) == 2
"""
REMOVAL_TESTS_HEAD = (
    "import importlib\n\nimport pytest\n\n"
    + REMOVAL_TESTS_BASE
    + """

def test_mean():
    assert calc.mean([1, 2, 3]) == 2
    with pytest.raises(ValueError):
        calc.mean([])


def test_legacy_module_is_gone():
    with pytest.raises(ImportError):
        importlib.import_module("calc.legacy")
"""
)


def make_removal_repo(root: Path) -> tuple[Path, GeneratedPR]:
    """A repository whose one PR deletes a module (calc/legacy.py) and moves its function into calc.core; its
    held-out tests check that the module is gone and reach the package through calc/__init__.py."""
    repo = root / "calc"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    base = _commit(
        repo,
        {
            "calc/__init__.py": REMOVAL_INIT_BASE,
            "calc/core.py": CORE,
            "calc/legacy.py": LEGACY,
            "tests/test_core.py": REMOVAL_TESTS_BASE,
            "README.md": "# calc\n",
        },
        "calc: add, subtract and a legacy mean",
    )
    _git(repo, "checkout", "-q", "-b", "pr-4", base)
    _git(repo, "rm", "-q", "calc/legacy.py")
    head = _commit(
        repo,
        {
            "calc/__init__.py": REMOVAL_INIT_HEAD,
            "calc/core.py": CORE + MEAN_IMPL,
            "tests/test_core.py": REMOVAL_TESTS_HEAD,
        },
        "Move mean into calc.core and drop calc.legacy",
    )
    _git(repo, "checkout", "-q", "main")
    title = "Move mean into calc.core and drop calc.legacy"
    body = "`calc.mean(values)` should live in `calc.core` (ValueError on an empty sequence); remove `calc/legacy.py`."
    return repo, GeneratedPR(4, title, body, base, head)
