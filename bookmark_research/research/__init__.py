"""Research sessions: frozen inventories, budgeted evidence, verified claims, coverage and the report."""
