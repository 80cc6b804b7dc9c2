"""One error hierarchy; the CLI turns any HugebenchError into a clean exit in one place."""

from __future__ import annotations


class HugebenchError(Exception):
    """Base of every error hugebench reports to a user. The message names what and how to fix it."""

    exit_code = 1


class SpecError(HugebenchError):
    """A YAML experiment file is malformed: names the file, line and key."""

    exit_code = 2


class PrivilegeError(HugebenchError):
    """An action needs root (e.g. a THP mode change); the message gives the command to run."""

    exit_code = 3


class ToolMissingError(HugebenchError):
    """A library or tool the sweep needs is not installed; the message names the package."""

    exit_code = 4


class SystemStateError(HugebenchError):
    """A kernel knob refused a value, or a stale journal says the machine was left changed."""

    exit_code = 5


class UnsafePathError(HugebenchError):
    """A path hugebench would write through is not safe to write as root: a symbolic link or a file another
    user owns, a FIFO, a file with several hard links (hugebench.safefs). The message names the path and
    why."""
