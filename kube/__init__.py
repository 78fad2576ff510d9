"""The Kubernetes vocabulary and edge, the bottom layer.

The typed immutable model (``model``), conversion of Kubernetes JSON into it
(``convert``), quantities, well-known names, Go durations, snapshot loading and the
``ClusterAPI`` seam. Everything above speaks these types; nothing here knows about
scheduling or autoscaling.
"""
