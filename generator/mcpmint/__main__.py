from mcpmint.cli import entry

entry()
