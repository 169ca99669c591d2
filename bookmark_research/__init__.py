"""bookmark-research: index, search and research Bookmark Canvas exports locally."""

__version__ = "0.1.0"
