"""``explain``: why a pod did (not) trigger a scale-up and why a node is (not) removed.

It runs the same loop ``plan`` runs on the same input and reads that loop's decision
(``verdicts``), then names the objects behind each storage refusal (``storage``); it
never decides anything of its own, so its verdicts are ``plan``'s by construction.
"""
