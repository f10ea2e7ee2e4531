"""What is fetched next: the focused frontier (:mod:`.scheduler` and the modules it composes)."""
