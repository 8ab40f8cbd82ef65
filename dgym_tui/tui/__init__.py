"""The Textual front end (``dgym-tui``): app, widgets, screens and the replay view."""
