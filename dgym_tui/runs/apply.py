"""``dgym apply RUN/EPISODE PATH``: write a recorded episode's patch into a checkout.

The same rules as the app's ``w`` (:meth:`dgym_tui.core.fs.workspace.Workspace.apply_to_source`):
a file the checkout changed since the episode's start is merged three-way
(``git merge-file`` against the episode's starting text, recorded in the
trajectory's ``originals``); if any file conflicts, nothing is written; every
read and write goes through folder descriptors of the checkout
(:class:`~dgym_tui.core.fs.safefs.SafeTree`), never through links leading out of it.
"""

from __future__ import annotations

import os
from pathlib import Path

from dgym_tui.core.fs.gitpatch import merge3
from dgym_tui.core.fs.patches import PatchError, parse_patch, patched_text
from dgym_tui.core.fs.safefs import SafeTree
from dgym_tui.core.types import ApplyConflictError, WorkspaceError
from dgym_tui.episode.trajectory import TrajectoryError, read_trajectory
from dgym_tui.runs.runner import PATCH_FILE, TRAJECTORY_FILE


def episode_patch(folder: str | os.PathLike[str]) -> tuple[str, dict[str, str | None]]:
    """The patch of an episode folder and the starting text of the files it changed.

    Args:
        folder: an episode folder of a ``dgym run`` (``patch.diff`` and/or
            ``trajectory.jsonl``).

    Returns:
        ``(patch, originals)``: the unified diff ("" when the episode changed
        nothing) and ``{path: text at the episode's start, None if it did not
        exist}`` (empty for a version-1 trajectory, which does not record them).

    Raises:
        TrajectoryError: neither ``patch.diff`` nor a readable trajectory.
    """
    folder = Path(folder)
    originals: dict[str, str | None] = {}
    patch = None
    try:
        traj = read_trajectory(folder / TRAJECTORY_FILE)
    except TrajectoryError:
        traj = None
    if traj is not None:
        for record in traj.steps:
            for rel, text in (record.get("originals") or {}).items():
                originals.setdefault(rel, text)
        patch = (traj.footer or {}).get("patch")
    if (folder / PATCH_FILE).is_file():
        patch = (folder / PATCH_FILE).read_text(encoding="utf-8")
    if patch is None:
        if traj is None:
            raise TrajectoryError(f"{folder}: no {PATCH_FILE} and no readable {TRAJECTORY_FILE}")
        raise TrajectoryError(f"{folder}: the episode did not finish (no patch recorded)")
    return patch, originals


def _read(tree: SafeTree, rel: str) -> bytes | None:
    """The bytes of regular file ``rel`` of the checkout (None: missing)."""
    try:
        kind = tree.kind(rel, follow=False)
        if kind is None:
            return None
        if kind != "file":
            raise ApplyConflictError([rel])
        return tree.read_bytes(rel)
    except OSError as exc:
        raise WorkspaceError(f"cannot read {rel!r} in {tree.path}: {exc.strerror or exc}") from None


def apply_episode(folder: str | os.PathLike[str], checkout: str | os.PathLike[str]) -> list[str]:
    """Apply an episode's patch to ``checkout``: all files or none.

    Args:
        folder: the episode folder.
        checkout: the repository folder to write into.

    Returns:
        The relative paths written or deleted (empty for an empty patch).

    Raises:
        TrajectoryError: the episode has no patch.
        PatchError: the patch is malformed or does not apply to the episode's
            starting text (or, without recorded originals, to the checkout).
        ApplyConflictError: files the checkout changed conflict with the
            patch (or are links / special files); nothing was written.
        WorkspaceError: the checkout cannot be opened or written.
    """
    patch, originals = episode_patch(folder)
    try:
        tree = SafeTree(checkout)
    except OSError as exc:
        raise WorkspaceError(f"cannot open {checkout}: {exc.strerror or exc}") from None
    try:
        plan: list[tuple[str, bytes | None]] = []
        conflicts: list[str] = []
        for fp in parse_patch(patch):
            for rel in dict.fromkeys(p for p in (fp.old_path, fp.new_path) if p):
                if rel.startswith("/") or ".." in rel.split("/"):
                    raise PatchError(f"{rel}: a patch path must stay inside the checkout")
            source = fp.old_path or fp.path
            theirs = _read(tree, source) if fp.old_path else None
            if source in originals:
                text = originals[source]
                base = None if text is None else text.encode("utf-8")
            else:
                base = theirs  # no record of the start: the checkout must be it
            new = patched_text(fp, None if base is None else base.decode("utf-8"))
            ours = None if new is None else new.encode("utf-8")
            if fp.new_path and fp.old_path and fp.new_path != fp.old_path:
                plan.append((fp.old_path, None))
            target = fp.new_path or fp.old_path
            current = theirs if target == source else _read(tree, target)
            if current == base or current == ours:
                plan.append((target, ours))
                continue
            merged = None
            if base is not None and ours is not None and current is not None:
                merged = merge3(base, ours, current)
            if merged is None:
                conflicts.append(target)
            else:
                plan.append((target, merged))
        if conflicts:
            raise ApplyConflictError(conflicts)
        for rel, data in plan:
            try:
                if data is None:
                    tree.unlink(rel)
                else:
                    tree.write_bytes(rel, data)
            except OSError as exc:
                raise WorkspaceError(f"could not write {rel!r} in {checkout}: "
                                     f"{exc.strerror or exc}") from None
        return list(dict.fromkeys(rel for rel, _ in plan))
    finally:
        tree.close()
