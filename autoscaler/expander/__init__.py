"""Expanders: choose which node group to scale up among the options that help.

One module per upstream expander (``random``, ``most-pods``, ``least-waste``,
``least-nodes``, ``price``, ``priority``), each a ``Filter``; ``build_chain`` turns
the ``--expander`` names into a ``Chain`` whose ``choose`` the scale-up planner calls.
"""

from autoscaler.expander.base import ExpanderContext, ExpansionOption, Filter
from autoscaler.expander.chain import Chain, build_chain

__all__ = ["Chain", "ExpanderContext", "ExpansionOption", "Filter", "build_chain"]
