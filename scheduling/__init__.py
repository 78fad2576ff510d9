"""The scheduling half: a kube-scheduler extender and the pod webhook (thesis 3.3, 4.3, 4.4).

Both reuse the simulator's predicate checker and the live adapter's watch caches, so
what places pods and what the autoscaler simulates agree.
"""
