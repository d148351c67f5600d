"""s2s-ft fine-tuning data: (source, target) pairs in the packed layout of each method."""
