"""The SQLite index: schema, incremental writes, search, context and counts."""
