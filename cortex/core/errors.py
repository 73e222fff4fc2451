"""The one error type people meet: a one-line message, a hint saying what to do, an exit code.

Library code raises it; the CLI edge (cortex.cli.commands) prints `cortex: MESSAGE; HINT` and exits with
`code` (1: the command failed, 2: usage or configuration).
"""


class CortexError(Exception):
    """A problem a person can fix: a one-line message, an optional hint, an exit code."""

    def __init__(self, message: str, hint: str = "", code: int = 1):
        super().__init__(message)
        self.hint = hint
        self.code = code
