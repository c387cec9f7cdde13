"""The policyd daemon's process: its command line and start-up, the processes of --processes
and their shared journal, the state directory, the watcher of rule and catalog files. It runs
the gRPC edge (policyd/server/) over the serving state."""
