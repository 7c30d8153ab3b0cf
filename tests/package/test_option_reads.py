"""Every option is read once, into the settings (options.py ``Settings``, config.py ``RunConfig``): no other module
of the package calls ``getoption``/``getvalue`` or reads ``config.option``.  Read as text (ast): an attribute
named ``option`` or a call of ``getoption`` anywhere else is a second way to read an option."""

from __future__ import annotations

import ast

from package_graph import modules

#: The settings modules: they read the options, everything else reads them.
SETTINGS_MODULES = ("pytest_hypeedit.options", "pytest_hypeedit.config")


def option_reads(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("option", "getoption"):
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "getvalue" and isinstance(node.ctx, ast.Load):
            parent_calls = [call for call in ast.walk(tree) if isinstance(call, ast.Call) and call.func is node]
            if any(call.args for call in parent_calls):  # config.getvalue("dist"), not BytesIO.getvalue()
                lines.append(node.lineno)
    return lines


def test_no_option_is_read_outside_the_settings():
    found = {module: lines for module, path in modules().items() if module not in SETTINGS_MODULES
             if (lines := option_reads(ast.parse(path.read_text(encoding="utf-8"))))}
    assert not found, ("options read outside the settings (add a field to options.py Settings and read it with "
                       f"settings_of): {found}")


def test_the_check_sees_each_way_of_reading_an_option():
    planted = ast.parse("a = config.getoption('x')\nb = config.option.y\nc = config.getvalue('dist')\n"
                        "d = buffer.getvalue()\n")
    assert option_reads(planted) == [1, 2, 3]
