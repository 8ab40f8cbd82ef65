"""Turn titles into URL slugs."""


def slugify(text):
    """Lowercase ``text``, trim it, and join its words with single dashes."""
    return text.strip().lower().replace(" ", "-")
