"""User settings (provider order, timeouts, archive, direct-fetch policy) and credentials."""
