"""Saving the form to config.toml: when not to, and the write itself (blocking: run it in a thread)."""

from __future__ import annotations

from pathlib import Path

from w2c_tui.config.schema import Settings
from w2c_tui.tui.workspace import Workspace


def save_refusal(workspace: Workspace, path: Path) -> str:
    """Why the form must not be saved over `path` at all ("" when it may)."""
    if workspace.config_error and workspace.loaded.path is None and path.exists():
        # The form holds defaults, not the file: saving would overwrite what the user wrote.
        return (
            f"Not saved: {path} could not be loaded, so the form shows defaults, not your file; "
            f"nothing was written. Fix the file in an editor and reopen the app. "
            f"({workspace.config_error})"
        )
    return ""


def write_config(workspace: Workspace, settings: Settings, path: Path, renamed: dict[str, str]) -> str:
    """Write config.toml (blocking); the error to show, or "" when saved."""
    from w2c_tui.config import ConfigError, save_settings

    try:
        # Only what differs from the file as last loaded or saved is written.
        save_settings(settings, path, loaded_as=workspace.on_disk, renamed=renamed)
    except ConfigError as exc:  # the file does not load as it is now: left untouched
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - shown to the user, the form stays as typed
        return f"Could not save {path}: {exc}"
    return ""


def saved_note(path: Path) -> str:
    return f"Saved {path} (comments kept; tokens stay in .env)"
