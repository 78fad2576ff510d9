"""A simulated Kubernetes cluster and cloud for running the real autoscaler loop in simulated time.

``load_scenario(path)`` reads a scenario (a snapshot plus a ``Scenario`` object with a
timeline); ``World(scenario)`` builds the cluster (``world.cluster``, a
``kube.clusterapi.ClusterAPI``) and the cloud (``world.cloud``, a
``cloudproviders.interface.CloudProvider``); ``world.advance(until)`` lets time pass;
``world.metrics`` records node-hours, cost, evictions, pending times and data loss.
The autoscaler drives it from outside: this package never imports ``autoscaler``.
"""

from emulator.scenario import Scenario, load_scenario, parse_duration
from emulator.world import World

__all__ = ["Scenario", "World", "load_scenario", "parse_duration"]
