"""The commands: the CLI, plan's output, simulate's runner, report and chart (and run).

The top layer: it composes the library (``autoscaler``) with the world it runs
against (``emulator``, and the live Kubernetes adapter) and owns every process-level
concern: flags, exit codes, output formats, the garbage collector.
"""
