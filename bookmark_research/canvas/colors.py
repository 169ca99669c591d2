"""The tag and note colours of the format (no pydantic: input models import them cheaply)."""

TAG_COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "gray")
DEFAULT_NOTE_COLOR = "orange"
