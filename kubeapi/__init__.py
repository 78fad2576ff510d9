"""The live Kubernetes adapter: the ``ClusterAPI`` seam over the official client.

List-then-watch caches convert objects to the model as events arrive, so a loop
builds its snapshot from memory; acting (taints, evictions, events, the status
ConfigMap) and leader election go through the same client.
"""
