"""No file under plugins/ holds more than 400 lines of code (issue 31: throughput_probe.py had 1,012 lines doing
five things, rules/stab.py three rule groups and a report row). Lines of code: not blank, not a comment, not a
docstring, not a module's DOCUMENTATION, EXAMPLES or RETURN. A file that outgrows it is split by what it does."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

from conftest import REPO

LIMIT = 400


def code_lines(text):
    tree = ast.parse(text)
    skip = set()
    for node in ast.walk(tree):
        names = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if isinstance(node, ast.Assign) and set(names) & {"DOCUMENTATION", "EXAMPLES", "RETURN"}:
            skip.update(range(node.lineno, node.end_lineno + 1))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                skip.update(range(first.lineno, first.end_lineno + 1))
    return sum(1 for number, line in enumerate(text.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and number not in skip)


def test_the_count_leaves_out_what_is_not_code():
    text = '"""Module doc\nover two lines."""\n\nDOCUMENTATION = r"""\na: b\n"""\n\n\ndef f():\n' \
           '    """Doc."""\n    # a comment\n    return 1\n'
    assert code_lines(text) == 2  # def f(): and return 1


def test_no_file_is_over_the_limit():
    over = []
    for top, _dirs, files in os.walk(os.path.join(REPO, "plugins")):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(top, name)
                with open(path, encoding="utf-8") as handle:
                    count = code_lines(handle.read())
                if count > LIMIT:
                    over.append("%s: %d" % (os.path.relpath(path, REPO), count))
    assert not over, "split these by what they do:\n" + "\n".join(over)


def test_no_private_name_is_imported_from_another_module():
    """A name with a leading underscore is its module's own: what another module needs is public (issue 31 found
    22 such imports). Package names (_audit, _topology) and an import's own alias (``as _lldp``) are not counted."""
    found = []
    for top, _dirs, files in os.walk(os.path.join(REPO, "plugins")):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(top, name)
                with open(path, encoding="utf-8") as handle:
                    tree = ast.parse(handle.read())
                for node in ast.walk(tree):
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ansible_collections."):
                        found += ["%s: %s from %s" % (os.path.relpath(path, REPO), a.name, node.module)
                                  for a in node.names if a.name.startswith("_")]
    assert not found, "\n".join(found)
