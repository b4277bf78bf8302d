from w2c_tui.cli import entry

entry()
