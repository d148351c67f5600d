"""Model properties: leakage by gradients, training/decoding agreement, forward and init, tasks, criteria."""
