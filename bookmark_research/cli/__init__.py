"""The command-line front end: a thin click adapter over the core operation registry."""
