"""Run-time datasets, by purpose: ``pretraining/`` (PMLM, UniLM v1 objectives, PALM pairs) and
``seq2seq/`` (s2s-ft pairs); the modules here are shared by both (seeding, masking rates, batching,
dictionaries)."""
