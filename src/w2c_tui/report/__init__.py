"""Plain text of what a session holds, shared by the CLI and the TUI: numbers, usage, the endpoint.

It renders values it is given (no reading of files, no Textual markup), so both faces say the
same thing in the same words.
"""
