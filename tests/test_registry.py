"""The registry's module table matches what each stage module registers."""

from __future__ import annotations

import importlib

from bookmark_research.core import registry


def test_module_table_lists_exactly_what_each_module_registers() -> None:
    for module, names in registry.MODULES.items():
        before = set(registry.OPERATIONS)
        importlib.import_module(module)
        defined = {n for n, op in registry.OPERATIONS.items() if op.func.__module__ == module}
        assert defined == set(names), (module, defined ^ set(names))
        assert len(names) == len(set(names))
        assert set(registry.OPERATIONS) >= before


def test_every_operation_has_one_home() -> None:
    homes = [name for names in registry.MODULES.values() for name in names]
    assert len(homes) == len(set(homes))
    assert list(registry.all_operations()) == homes
