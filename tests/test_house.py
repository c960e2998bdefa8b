"""The house rules of ``doc/architecture.rst`` that a script can check (issue 16).

An estimator file is the scikit-learn face of its wing: it validates and orchestrates,
and the numerics live in the wing's module-level kernels. Its size is the symptom a
newcomer feels first, so it is checked here: at most :data:`MAX_CODE_LINES` lines of
code (docstrings, comments and blank lines not counted), as scikit-learn's thin
``decomposition/_lda.py`` keeps its estimator.
"""

import ast
import io
import tokenize
from pathlib import Path

import pytest

import skdgm

MAX_CODE_LINES = 300
ESTIMATOR_FILES = sorted(Path(skdgm.__file__).parent.glob("*/_estimator.py"))


def code_lines(source):
    """The line numbers of ``source`` that hold code.

    A line holds code when a token other than a comment, a newline or an indent starts
    or continues on it, and it is not part of a docstring (the first statement of a
    module, class or function when that statement is a string).
    """
    docstring_lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                docstring_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
            tokenize.DEDENT, tokenize.ENDMARKER}
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines - docstring_lines


def test_code_lines_counts_code_only():
    source = ('"""Module docstring\n\nover lines."""\n\n'
              "import os  # a comment\n"
              "# a whole-line comment\n\n"
              "def f(x):\n"
              '    """Doc."""\n'
              "    return (x +\n"
              "            1)\n")
    assert sorted(code_lines(source)) == [5, 8, 10, 11]


def test_estimator_files_found():
    assert {p.parent.name for p in ESTIMATOR_FILES} == {"dbm", "deep_lda", "grbm", "sbn"}


@pytest.mark.parametrize("path", ESTIMATOR_FILES, ids=lambda p: p.parent.name)
def test_estimator_file_orchestrates_only(path):
    n = len(code_lines(path.read_text()))
    assert n <= MAX_CODE_LINES, (
        f"{path.parent.name}/_estimator.py has {n} lines of code (limit "
        f"{MAX_CODE_LINES}): move numerics into the wing's module-level kernels")
