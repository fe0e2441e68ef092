"""Griffe extension for the docs: the rooms' lazy re-exports as members.

A package ``__init__`` lists ``_EXPORTS = {name: defining module}`` and imports nothing
(drivesim._exports); static analysis therefore sees no members. This extension reads the
literal dict and adds each name as an alias of its definition, and sets the module's exports
to those names, so ``::: drivesim.core`` documents exactly what the room exports.
"""

from __future__ import annotations

import ast

import griffe


class LazyExports(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for module in [pkg, *_submodules(pkg)]:
            _add_exports(module)


def _submodules(module: griffe.Module):
    for member in module.modules.values():
        yield member
        yield from _submodules(member)


def _add_exports(module: griffe.Module) -> None:
    attr = module.members.get("_EXPORTS")
    if attr is None or isinstance(attr, griffe.Alias) or attr.value is None:
        return
    exports = ast.literal_eval(str(attr.value))
    for name, origin in exports.items():
        if name not in module.members:
            module.set_member(name, griffe.Alias(name, f"{origin}.{name}", parent=module))
    names = sorted(exports)
    if name_version := module.members.get("__version__"):
        names = [name_version.name, *names]
    module.exports = names
