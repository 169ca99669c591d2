"""The Bookmark Canvas export format: strict JSON, folder layout, section and canvas models."""
