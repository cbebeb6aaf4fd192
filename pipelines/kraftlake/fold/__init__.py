"""Bronze -> silver -> gold: committed records typed into partition changes, topics, brokers
and configs (`silver`), the cluster facts in force at an offset (`context`), the
per-partition kernel that folds changes into timeline, events and intervals (`kernel`), and
the check of snapshots against the folded state (`reconcile`)."""
