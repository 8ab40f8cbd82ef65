"""Pull a benchmark's Docker images before a run, with a progress bar.

``dgym prepull swebench -p instances=lite`` pulls every image a run would
need, so the first episodes do not wait on downloads (and a missing image
shows up before any LLM money is spent).
"""

from __future__ import annotations

from collections.abc import Iterable


class PullError(ValueError):
    """An image could not be pulled; the message names it and says why."""


def pull_images(images: Iterable[str], progress: bool = True) -> list[str]:
    """Pull the ``images`` not present locally, one after the other.

    Args:
        images: image names (duplicates are pulled once).
        progress: draw a progress bar on the terminal (images done, and the
            bytes of the layers of the image being pulled).

    Returns:
        the images pulled (those already present are skipped).

    Raises:
        TerminalError: Docker is unreachable.
        PullError: an image cannot be pulled.
    """
    from docker.errors import APIError, ImageNotFound
    from docker.utils import parse_repository_tag
    from rich.progress import BarColumn, Progress, TextColumn

    from dgym_tui.core.terminals.docker import get_client

    client = get_client()
    missing = []
    for image in dict.fromkeys(images):
        try:
            client.images.get(image)
        except ImageNotFound:
            missing.append(image)
    pulled: list[str] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
                  disable=not progress) as bar:
        overall = bar.add_task("images", total=len(missing), count=f"0/{len(missing)}")
        for done, image in enumerate(missing, 1):
            layers: dict[str, tuple[int, int]] = {}
            current = bar.add_task(image, total=None, count="")
            repository, tag = parse_repository_tag(image)  # "host:5000/repo" has no tag
            try:
                for event in client.api.pull(repository, tag=tag or "latest", stream=True,
                                             decode=True):
                    if "error" in event:
                        raise PullError(f"pulling {image} failed: {event['error']}")
                    detail = event.get("progressDetail") or {}
                    if event.get("id") and detail.get("total"):
                        layers[event["id"]] = (detail.get("current", 0), detail["total"])
                        got, total = (sum(c for c, _ in layers.values()),
                                      sum(t for _, t in layers.values()))
                        bar.update(current, completed=got, total=total,
                                   count=f"{got / 1e6:.1f}/{total / 1e6:.1f} MB")
            except APIError as exc:
                raise PullError(f"pulling {image} failed: {exc.explanation or exc}") from None
            bar.remove_task(current)
            bar.update(overall, advance=1, count=f"{done}/{len(missing)}")
            pulled.append(image)
    return pulled


__all__ = ["PullError", "pull_images"]
