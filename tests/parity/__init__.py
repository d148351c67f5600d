"""Agreement with external references: transformers, the perl ROUGE-1.5.5, the real MiniLM."""
