"""The core: one registry of operations with pydantic input and output models."""
